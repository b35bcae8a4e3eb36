#include "lib/runtime/cluster/listen_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;

TEST(ListenAddress, AnIpAddressIsListenedOnAsItIs) {
  for (const char* planned : {"127.0.0.2:4000", "10.1.2.3:80", "[::1]:5000"}) {
    StatusOr<ListenAddress> a = ResolveListenAddress(planned);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->address, planned);
    EXPECT_EQ(a->note, "");
  }
}

TEST(ListenAddress, LocalhostStaysOnLoopback) {
  StatusOr<ListenAddress> a = ResolveListenAddress("localhost:4000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->address, "localhost:4000");
  EXPECT_EQ(a->note, "");
}

TEST(ListenAddress, ANameThatDoesNotResolveIsAnErrorNamingIt) {
  StatusOr<ListenAddress> a = ResolveListenAddress("no-such-host.invalid:4000");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(Message(a.status())),
              HasSubstr("cannot listen on no-such-host.invalid:4000: its host "
                        "no-such-host.invalid does not resolve here"));
}

TEST(ListenAddress, NoPortIsAnError) {
  EXPECT_FALSE(ResolveListenAddress("127.0.0.1").ok());
  EXPECT_FALSE(ResolveListenAddress(":80").ok());
}

}  // namespace
}  // namespace dtf::runtime
