// RemoteHost::Ship over a real sshd: an env archive whose entry names would
// leave the staging directory is refused before anything is written.
#include <gmock/gmock.h>

#include <filesystem>
#include <string>

#include "lib/base/strings.h"
#include "lib/launch/ssh/remote_host.h"
#include "tests/launch/pack/crafted_zip.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using ssh::testing::SshdTest;
using ::testing::HasSubstr;

class RemoteShipTest : public SshdTest {};

TEST_F(RemoteShipTest, RefusesAnEntryNameThatLeavesTheStagingDirectory) {
  std::unique_ptr<ssh::Session> session = Connect();
  ASSERT_NE(session, nullptr);
  const std::string work = dir_.Join("work");
  RemoteHost host(std::move(session), work);
  for (const char* bad : {"../escape", "bin/../../../escape", "/tmp/escape"}) {
    const std::string zip = dir_.Join("env-crafted.zip");
    ASSERT_TRUE(pack::testing::WriteCraftedZip(
        zip, {{"bin/dtf", "#!/bin/sh\n"}, {bad, "escaped"}}));
    ShippedArchive env{"00112233aabbccdd", zip, fs::file_size(zip)};
    ShippedArchive job{"ffeeddcc00112233", dir_.Join("job.zip"), 0};
    StatusOr<ShipReport> shipped = host.Ship(env, job);
    ASSERT_FALSE(shipped.ok()) << bad;
    EXPECT_EQ(shipped.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(Message(shipped.status()), HasSubstr(StrCat(zip, ": ", bad)));
    // Nothing was written: no staging directory, nothing beside it.
    EXPECT_FALSE(fs::exists(StrCat(work, "/envs"))) << bad;
    EXPECT_FALSE(fs::exists(StrCat(work, "/escape")));
    EXPECT_FALSE(fs::exists(dir_.Join("escape")));
  }
}

}  // namespace
}  // namespace dtf::launch
