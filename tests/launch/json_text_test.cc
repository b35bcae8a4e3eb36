#include "lib/launch/json_text.h"

#include <gtest/gtest.h>

namespace dtf::launch {
namespace {

using Json = nlohmann::ordered_json;

TEST(JsonText, WritesBytesThatAreNotUtf8AsReplacementCharacters) {
  Json j;
  j["error"] = "worker:1: \xFF\xFE stderr";
  j["ok"] = "caf\xC3\xA9";
  EXPECT_EQ(JsonText(j),
            "{\n  \"error\": \"worker:1: \xEF\xBF\xBD\xEF\xBF\xBD stderr\",\n"
            "  \"ok\": \"caf\xC3\xA9\"\n}\n");
}

TEST(JsonText, FirstNonUtf8NamesThePointerAndTheBytes) {
  Json j;
  j["job"] = "/a/b.toml";
  j["tasks"] = Json::array({Json{{"dir", "/ok"}},
                            Json{{"dir", "/r\xE9sum\xE9"}, {"x", "\xC0\xAF"}}});
  ASSERT_TRUE(FirstNonUtf8(j).has_value());
  EXPECT_EQ(*FirstNonUtf8(j), "/tasks/1/dir: \"/r\\xe9sum\\xe9\"");

  Json key;
  key["a/b~\xFF"] = 1;
  EXPECT_EQ(*FirstNonUtf8(key), "/: the key \"a/b~\\xff\"");

  j["tasks"][1]["dir"] = "/r\xC3\xA9sum\xC3\xA9";
  j["tasks"][1]["x"] = "fine";
  EXPECT_EQ(FirstNonUtf8(j), std::nullopt);
}

}  // namespace
}  // namespace dtf::launch
