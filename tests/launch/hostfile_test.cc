#include "lib/launch/hostfile.h"

#include "gtest/gtest.h"
#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

TEST(Hostfile, ReadsHorovodDeepSpeedAndMpiForms) {
  StatusOr<std::vector<HostEntry>> hosts = ParseHostfile(
      "# the cluster\n"
      "gpu-1 slots=4 gpus=4\n"
      "\n"
      "gpu-2:2   # Horovod\n"
      "10.0.0.7 max_slots=3 ps=false user=train port=2222\n"
      "  [fe80::1]\n",
      "hosts.txt");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->size(), 4u);
  const auto& h = *hosts;
  EXPECT_EQ(h[0].host, "gpu-1");
  EXPECT_EQ(h[0].slots, 4);
  EXPECT_EQ(h[0].gpus, 4);
  EXPECT_TRUE(h[0].ps);
  EXPECT_EQ(h[0].line, 2);
  EXPECT_EQ(h[1].host, "gpu-2");
  EXPECT_EQ(h[1].slots, 2);
  EXPECT_EQ(h[2].host, "10.0.0.7");
  EXPECT_EQ(h[2].slots, 3);
  EXPECT_FALSE(h[2].ps);
  EXPECT_EQ(h[2].user, "train");
  EXPECT_EQ(h[2].port, 2222);
  EXPECT_EQ(h[3].host, "[fe80::1]");
  EXPECT_EQ(h[3].slots, 1);
  EXPECT_EQ(h[3].gpus, 0);
  EXPECT_FALSE(h[3].user.has_value());
}

TEST(Hostfile, ErrorsNameFileLineAndColumn) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"a\nb slots=0\n",
       "hosts:2:9: slots: expected an integer from 1 to 4096, got \"0\""},
      {"a gpus=x\n",
       "hosts:1:8: gpus: expected an integer from 0 to 1024, got \"x\""},
      {"a colour=red\n", "hosts:1:3: unknown key \"colour\""},
      {"a slots\n", "hosts:1:3: expected key=value, got \"slots\""},
      {"a\n  a\n", "hosts:2:3: host a is already listed on line 1"},
      {"a;rm slots=1\n", "hosts:1:1: \"a;rm\" is not a host name or address"},
      {"h:x\n", "hosts:1:3: expected a slot count after ':', got \"x\""},
      {"h ps=yes\n", "hosts:1:6: ps: expected true or false, got \"yes\""},
      {"h user=$(id)\n", "hosts:1:8: user: \"$(id)\" is not a user name"},
      {"h port=70000\n",
       "hosts:1:8: port: expected an integer from 1 to 65535"},
      {"# nothing\n\n", "hosts: no hosts"},
  };
  for (const Case& c : cases) {
    StatusOr<std::vector<HostEntry>> hosts = ParseHostfile(c.text, "hosts");
    ASSERT_FALSE(hosts.ok()) << c.text;
    EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(hosts.status()).find(c.error), std::string::npos)
        << "got: " << hosts.status() << "\nwanted: " << c.error;
  }
}

TEST(Hostfile, MissingFileIsNamed) {
  StatusOr<std::vector<HostEntry>> hosts = LoadHostfile("/no/such/hostfile");
  ASSERT_FALSE(hosts.ok());
  EXPECT_NE(Message(hosts.status()).find("/no/such/hostfile"),
            std::string::npos);
}

// A file without end (a device given by mistake) is refused once the
// limit is read, naming it, instead of being read for ever.
TEST(Hostfile, AnEndlessFileIsRefusedAtTheLimit) {
  StatusOr<std::vector<HostEntry>> hosts = LoadHostfile("/dev/zero");
  ASSERT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument)
      << hosts.status();
  EXPECT_NE(Message(hosts.status()).find("/dev/zero: larger than 16777216"),
            std::string::npos)
      << hosts.status();
}

}  // namespace
}  // namespace dtf::launch
