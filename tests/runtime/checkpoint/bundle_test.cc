#include "lib/runtime/checkpoint/bundle.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

Bundle Sample() {
  Bundle b;
  b.AddTensor("w", kernels::Tensor::FromValues({2, 3}, {1.5f, -2, 3, 4, 5, 6}));
  b.AddInt64s("step", std::vector<int64_t>{42, -7, INT64_MAX});
  b.AddString("meta", std::string("a\0b\xff", 4));
  b.AddFloats("empty", {});
  return b;
}

TEST(Bundle, RoundTripsEveryType) {
  dtf::testing::TempDir dir;
  const std::string path = dir.Join("b.dtf");
  ASSERT_TRUE(Sample().WriteFile(path).ok());
  StatusOr<Bundle> read = Bundle::ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  StatusOr<kernels::Tensor> w = read->GetTensor("w");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(w->data(), w->data() + 6),
            (std::vector<float>{1.5f, -2, 3, 4, 5, 6}));
  EXPECT_EQ(*read->GetInt64s("step"),
            (std::vector<int64_t>{42, -7, INT64_MAX}));
  EXPECT_EQ(*read->GetString("meta"), std::string("a\0b\xff", 4));
  EXPECT_TRUE(read->GetFloats("empty")->empty());
  EXPECT_EQ(read->entries().size(), 4u);
}

TEST(Bundle, AddReplacesAnEntryOfTheSameName) {
  Bundle b = Sample();
  b.AddInt64s("step", std::vector<int64_t>{1});
  EXPECT_EQ(b.entries().size(), 4u);
  EXPECT_EQ(*b.GetInt64s("step"), std::vector<int64_t>{1});
}

TEST(Bundle, MissingAndMistypedEntriesNameThemselves) {
  StatusOr<Bundle> b = Bundle::Parse(Sample().Serialize(), "ckpt.dtf");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->GetTensor("nope").status().code(), absl::StatusCode::kNotFound);
  Status st = b->GetTensor("step").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Message(st).find("ckpt.dtf: entry \"step\" holds int64"),
            std::string::npos)
      << st;
}

TEST(Bundle, EveryFlippedByteIsDetected) {
  const std::string bytes = Sample().Serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = char(bad[i] ^ 0x20);
    EXPECT_EQ(Bundle::Parse(bad, "x").status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
  }
}

TEST(Bundle, EveryTruncationIsDetected) {
  const std::string bytes = Sample().Serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(Bundle::Parse(bytes.substr(0, n), "x").status().code(),
              absl::StatusCode::kDataLoss)
        << "length " << n;
  }
}

TEST(Bundle, NotABundle) {
  Status st = Bundle::Parse("hello world, not a bundle", "f.txt").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(Message(st).find("f.txt: not a dtf tensor bundle"),
            std::string::npos);
  dtf::testing::TempDir dir;
  EXPECT_EQ(Bundle::ReadFile(dir.Join("missing")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dtf::runtime
