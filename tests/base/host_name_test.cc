#include "lib/base/host_name.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace dtf {
namespace {

constexpr size_t kNone = std::string_view::npos;

// --cluster_spec, TF_CONFIG and dtf serve's flags: the host of "host:port".
TEST(HostName, NameTakesLettersDigitsDotsDashesAndUnderscores) {
  for (std::string_view host :
       {"localhost", "host_1", "10.0.0.7", "gpu-3.example.com", "A-Z.0_9",
        "-leading-dash"}) {
    EXPECT_TRUE(IsValidHost(host, HostRule::kName)) << host;
  }
  // No length limit.
  EXPECT_TRUE(IsValidHost(std::string(300, 'a'), HostRule::kName));
}

TEST(HostName, NameRefusesEverythingElseNamingTheByte) {
  EXPECT_FALSE(IsValidHost("", HostRule::kName));
  EXPECT_EQ(FindInvalidHostChar("bad host", HostRule::kName), 3u);
  EXPECT_EQ(FindInvalidHostChar("::1", HostRule::kName), 0u);
  EXPECT_EQ(FindInvalidHostChar("[::1]", HostRule::kName), 0u);
  EXPECT_EQ(FindInvalidHostChar("a/b", HostRule::kName), 1u);
  EXPECT_EQ(FindInvalidHostChar("a$(id)", HostRule::kName), 1u);
  EXPECT_EQ(FindInvalidHostChar("h\xc3\xa9", HostRule::kName), 1u);
  EXPECT_EQ(FindInvalidHostChar("a%eth0", HostRule::kName), 1u);
  EXPECT_EQ(FindInvalidHostChar("localhost", HostRule::kName), kNone);
}

// Hostfiles and a profile's hosts: a host as ssh takes it.
TEST(HostName, SshHostAlsoTakesIpv6) {
  for (std::string_view host : {"node1", "10.0.0.7", "host_1", "::1", "fe80::1",
                                "[::1]", "[2001:db8::7]"}) {
    EXPECT_TRUE(IsValidHost(host, HostRule::kSshHost)) << host;
  }
  EXPECT_TRUE(IsValidHost(std::string(253, 'a'), HostRule::kSshHost));
}

TEST(HostName, SshHostRefusesWhatSshOrAShellWouldMisread) {
  EXPECT_FALSE(IsValidHost("", HostRule::kSshHost));
  // ssh would read it as an option.
  EXPECT_FALSE(IsValidHost("-oProxyCommand=x", HostRule::kSshHost));
  EXPECT_FALSE(IsValidHost(std::string(254, 'a'), HostRule::kSshHost));
  for (std::string_view host :
       {"a;rm", "a b", "$(id)", "a/b", "a%eth0", "h\xc3\xa9", "a\tb", "a@b"}) {
    EXPECT_FALSE(IsValidHost(host, HostRule::kSshHost)) << host;
  }
  // The length and the leading dash are IsValidHost's to check.
  EXPECT_EQ(FindInvalidHostChar("-x", HostRule::kSshHost), kNone);
  EXPECT_EQ(FindInvalidHostChar("a;rm", HostRule::kSshHost), 1u);
}

// A local profile's `host = ...`: the address its tasks bind, left to the
// resolver except for what cannot be part of one.
TEST(HostName, BindAddressTakesAnyPrintableByteButSeparators) {
  for (std::string_view host :
       {"127.0.0.1", "0.0.0.0", "localhost", "-x", "host!", "a$b", "a@b",
        "h\xc3\xa9", "a%eth0", "a\x7f"}) {
    EXPECT_TRUE(IsValidHost(host, HostRule::kBindAddress)) << host;
  }
  EXPECT_TRUE(IsValidHost(std::string(300, 'a'), HostRule::kBindAddress));
}

TEST(HostName, BindAddressRefusesPortsPathsBracketsAndSpaces) {
  EXPECT_FALSE(IsValidHost("", HostRule::kBindAddress));
  for (std::string_view host : {"::1", "[::1]", "a:80", "a/b", "a b", "a\tb",
                                "a\nb", "a\rb", "a\x01"}) {
    EXPECT_FALSE(IsValidHost(host, HostRule::kBindAddress)) << host;
  }
  EXPECT_EQ(FindInvalidHostChar("a b", HostRule::kBindAddress), 1u);
}

// The inside of "[...]:port" in a cluster spec.
TEST(HostName, Ipv6Address) {
  for (std::string_view address :
       {"::1", "::", "2001:db8::1", "FE80::1", "::ffff:10.0.0.1",
        "fe80::1%eth0", "fe80::1%en_0.1"}) {
    EXPECT_TRUE(IsIpv6Address(address)) << address;
  }
  for (std::string_view address : {"", "localhost", "10.0.0.1", "g::1", "::1%",
                                   "::1%a b", "[::1]", "::1 ", "%eth0"}) {
    EXPECT_FALSE(IsIpv6Address(address)) << address;
  }
}

TEST(HostName, HostOfAddress) {
  EXPECT_EQ(HostOfAddress("10.0.0.1:2222"), "10.0.0.1");
  EXPECT_EQ(HostOfAddress("node-1.example:80"), "node-1.example");
  EXPECT_EQ(HostOfAddress("[::1]:2222"), "::1");
  EXPECT_EQ(HostOfAddress("[fe80::1%eth0]:1"), "fe80::1%eth0");
  EXPECT_EQ(HostOfAddress("localhost"), "localhost");
  EXPECT_EQ(HostOfAddress(""), "");
}

}  // namespace
}  // namespace dtf
