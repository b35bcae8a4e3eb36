#include "lib/base/s3_path.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/s3_xml.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(S3Path, Parse) {
  auto p = ParseS3Path("s3://my-bucket/a/b c/é.csv");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->bucket, "my-bucket");
  EXPECT_EQ(p->key, "a/b c/é.csv");
  EXPECT_EQ(S3PathString(*p), "s3://my-bucket/a/b c/é.csv");
  EXPECT_EQ(ParseS3Path("s3://bucket")->key, "");
  EXPECT_FALSE(IsS3Path("/tmp/s3://x"));
  EXPECT_THAT(std::string(Message(ParseS3Path("s3://UP/k").status())),
              HasSubstr("bucket name \"UP\" is not valid"));
  EXPECT_THAT(std::string(Message(ParseS3Path("/local").status())),
              HasSubstr("not an s3:// path"));
}

TEST(S3Path, UrlEncodeAsSignatureV4Wants) {
  EXPECT_EQ(S3UrlEncode("a b/é+&=%~_-.", true), "a%20b/%C3%A9%2B%26%3D%25~_-.");
  EXPECT_EQ(S3UrlEncode("a/b", false), "a%2Fb");
}

TEST(S3Xml, TextAndElements) {
  const std::string xml =
      "<Error><Code>NoSuchKey</Code><Message>a &amp; b &lt;&#233;&#x263A;"
      "</Message></Error><Contents><Key>k1</Key></Contents>"
      "<Contents><Key>k&apos;2</Key></Contents>";
  EXPECT_EQ(XmlText(xml, "Code"), "NoSuchKey");
  EXPECT_EQ(XmlText(xml, "Message"), "a & b <é☺");
  EXPECT_EQ(XmlText(xml, "Missing"), "");
  auto items = XmlElements(xml, "Contents");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(XmlText(items[1], "Key"), "k'2");
  EXPECT_EQ(XmlEscape("\"a\" & <b>"), "&quot;a&quot; &amp; &lt;b&gt;");
}

}  // namespace
}  // namespace dtf
