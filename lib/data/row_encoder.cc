#include "lib/data/row_encoder.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <unordered_set>

#include "lib/base/strings.h"
#include "lib/data/csv_text.h"
#include "lib/data/wire_format.h"

namespace dtf {
namespace {

using wire::VarintSize;

// The tags as the single bytes they encode to (each is below 0x80).
constexpr char kEntryByte = static_cast<char>(wire::kEntryTag);
constexpr char kValueByte = static_cast<char>(wire::kValueTag);
constexpr char kListByte = static_cast<char>(wire::kListValueTag);

char FeatureTag(ValueType t) {
  uint32_t field = t == ValueType::kInt     ? wire::kInt64List
                   : t == ValueType::kFloat ? wire::kFloatList
                                            : wire::kBytesList;
  return static_cast<char>(wire::MakeTag(field, wire::kLengthDelimited));
}

// Length of a length-delimited field holding `n` bytes: tag + length + n.
size_t Delimited(size_t n) { return 1 + VarintSize(n) + n; }

bool FastInt(std::string_view s, int64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool FastFloat(std::string_view s, float* v) {
  // Parsed as a double and then rounded to float32, as Python's float() and
  // tf.train.FloatList do, so both paths give the same bits.
  double d;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  *v = static_cast<float>(d);
  return true;
}

char* Put(char* p, std::string_view bytes) {
  std::memcpy(p, bytes.data(), bytes.size());
  return p + bytes.size();
}

}  // namespace

StatusOr<RowEncoder> RowEncoder::Create(const Schema& schema,
                                        const std::vector<std::string>& header,
                                        std::string_view source, char quote) {
  DTF_RETURN_IF_ERROR(ValidateSchema(schema));
  RowEncoder enc;
  enc.quote_ = quote;
  enc.has_header_ = !header.empty();
  enc.missing_ = schema.missing_values;
  for (const std::string& m : enc.missing_) {
    enc.max_missing_size_ = std::max(enc.max_missing_size_, m.size());
  }
  if (schema.label) enc.label_ = *schema.label;
  if (header.empty()) {
    for (const ColumnSpec& c : schema.columns) enc.csv_names_.push_back(c.name);
  } else {
    enc.csv_names_ = header;
  }
  enc.csv_index_.reserve(enc.csv_names_.size());
  for (size_t i = 0; i < enc.csv_names_.size(); ++i) {
    enc.csv_index_.emplace(enc.csv_names_[i], static_cast<int>(i));
  }
  if (enc.has_header_) {
    for (const ColumnSpec& c : schema.columns) {
      if (enc.CsvIndex(c.name) < 0) {
        return InvalidArgumentError(
            StrCat(source, ":1: schema column ", QuoteForMessage(c.name),
                   " is not in the header (", ListForMessage(header), ")"));
      }
    }
  }
  std::unordered_set<std::string_view> in_vector;
  for (const VectorSpec& v : schema.vectors) {
    in_vector.insert(v.columns.begin(), v.columns.end());
  }
  auto add = [&](Output o) {
    o.key_prefix.push_back(static_cast<char>(
        wire::MakeTag(wire::kMapKey, wire::kLengthDelimited)));
    wire::AppendVarint(o.name.size(), &o.key_prefix);
    o.key_prefix += o.name;
    enc.outputs_.push_back(std::move(o));
  };
  for (const ColumnSpec& c : schema.columns) {
    if (c.skip || in_vector.contains(c.name)) {
      continue;
    }
    Output o;
    o.name = c.name;
    o.type = c.type;
    o.csv_index = {enc.CsvIndex(c.name)};
    o.has_default = c.default_value.has_value();
    if (o.has_default) o.default_value = *c.default_value;
    o.required = c.required;
    o.label = schema.label && schema.label->column == c.name;
    if (o.label && !schema.label->mapping.empty()) {
      o.type = ValueType::kInt;
      o.mapped = true;
    }
    o.format = o.mapped ? ColumnFormat::kPlain : c.format;
    // Plain numbers read the same under kNumber; other formats read some
    // plain-looking cells differently ("2" is no bool, "1.500" is 1500 with
    // a decimal comma).
    const bool fast =
        o.format == ColumnFormat::kPlain || o.format == ColumnFormat::kNumber;
    if (!o.mapped && fast) o.scalar_index = o.csv_index[0];
    add(std::move(o));
  }
  for (const VectorSpec& v : schema.vectors) {
    Output o;
    o.name = v.name;
    o.type = v.type;
    for (const std::string& c : v.columns) {
      o.csv_index.push_back(enc.CsvIndex(c));
    }
    o.has_default = v.default_value.has_value();
    if (o.has_default) o.default_value = *v.default_value;
    o.required = true;
    add(std::move(o));
  }
  std::sort(enc.outputs_.begin(), enc.outputs_.end(),
            [](const Output& a, const Output& b) { return a.name < b.name; });
  return enc;
}

Status RowEncoder::CheckFields(const CsvRow& row,
                               std::string_view source) const {
  return CheckFieldCount(source, row, csv_names_.size(), has_header_);
}

int RowEncoder::CsvIndex(std::string_view name) const {
  const auto it = csv_index_.find(name);
  return it == csv_index_.end() ? -1 : it->second;
}

// Appends the value of one present cell of `o` to the scratch arrays.
Status RowEncoder::ParseCell(const Output& o, std::string_view cell,
                             Scratch* s) const {
  if (o.mapped) {
    auto it = label_.mapping.find(std::string(cell));
    if (it == label_.mapping.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : label_.mapping) known.push_back(k);
      return InvalidArgumentError(
          StrCat("label ", QuoteForMessage(cell), " of column \"", o.name,
                 "\" is not in schema.label.map (", label_.mapping.size(),
                 " values: ", ListForMessage(known), ")"));
    }
    s->ints.push_back(it->second);
    return OkStatus();
  }
  if (o.format != ColumnFormat::kPlain) {
    DTF_ASSIGN_OR_RETURN(Value parsed,
                         ParseFormattedValue(cell, o.type, o.format));
    if (o.type == ValueType::kInt) {
      s->ints.push_back(std::get<int64_t>(parsed));
    } else {
      s->floats.push_back(static_cast<float>(std::get<double>(parsed)));
    }
    return OkStatus();
  }
  switch (o.type) {
    case ValueType::kInt: {
      int64_t v;
      if (!FastInt(cell, &v)) {
        DTF_ASSIGN_OR_RETURN(Value parsed, ParseValue(cell, o.type));
        v = std::get<int64_t>(parsed);
      }
      s->ints.push_back(v);
      return OkStatus();
    }
    case ValueType::kFloat: {
      float v;
      if (!FastFloat(cell, &v)) {
        DTF_ASSIGN_OR_RETURN(Value parsed, ParseValue(cell, o.type));
        v = static_cast<float>(std::get<double>(parsed));
      }
      s->floats.push_back(v);
      return OkStatus();
    }
    case ValueType::kString:
      s->bytes.push_back(cell);
      return OkStatus();
  }
  return OkStatus();
}

Status RowEncoder::Parse(const Output& o, const CsvRow& row,
                         std::string_view source, Scratch* s,
                         Scratch::Slot* slot) const {
  slot->kind = 0;
  slot->count = 0;
  slot->first = o.type == ValueType::kInt     ? s->ints.size()
                : o.type == ValueType::kFloat ? s->floats.size()
                                              : s->bytes.size();
  for (int index : o.csv_index) {
    std::string_view cell = row.fields[index];
    // Quoting marks a value: a quoted "" is an empty string (for str
    // columns) and a quoted "?" is the text "?". An empty cell is missing
    // in any other case.
    bool missing;
    if (cell.empty()) {
      missing =
          !(row.quoted[index] && o.type == ValueType::kString && !o.mapped);
    } else {
      missing =
          cell.size() <= max_missing_size_ && !row.quoted[index] &&
          std::find(missing_.begin(), missing_.end(), cell) != missing_.end();
    }
    Status st;
    if (!missing && (o.type == ValueType::kString || o.mapped)) {
      DTF_RETURN_IF_ERROR(
          CheckTextCell(source, row, index, quote_, csv_names_[index]));
    }
    if (!missing) {
      st = ParseCell(o, cell, s);
    } else if (o.has_default) {
      switch (o.type) {
        case ValueType::kInt:
          s->ints.push_back(std::get<int64_t>(o.default_value));
          break;
        case ValueType::kFloat:
          s->floats.push_back(
              static_cast<float>(std::get<double>(o.default_value)));
          break;
        case ValueType::kString:
          s->bytes.push_back(std::get<std::string>(o.default_value));
          break;
      }
    } else if (o.label) {
      // An Example without its label would fail training far from here.
      return InvalidArgumentError(
          StrCat(source, ":", row.FieldLine(index), ":", row.columns[index],
                 ": label column \"", csv_names_[index], "\" is missing (",
                 cell.empty() ? std::string("the cell is empty")
                              : StrCat("the cell ", QuoteForMessage(cell),
                                       " is a missing-value token"),
                 ")"));
    } else if (o.required) {
      st = InvalidArgumentError(StrCat("missing value for required column \"",
                                       csv_names_[index], "\""));
    } else {
      return OkStatus();  // left out of this Example
    }
    if (!st.ok()) {
      return Status(st.code(), StrCat(source, ":", row.FieldLine(index), ":",
                                      row.columns[index], ": column \"",
                                      csv_names_[index], "\": ", st.message()));
    }
    ++slot->count;
  }
  slot->kind = static_cast<int>(o.type) + 1;
  size_t payload = 0;
  switch (o.type) {
    case ValueType::kInt:
      for (size_t i = 0; i < slot->count; ++i) {
        payload += VarintSize(static_cast<uint64_t>(s->ints[slot->first + i]));
      }
      slot->payload = payload;
      slot->list_size = Delimited(payload);
      break;
    case ValueType::kFloat:
      slot->list_size = Delimited(4 * slot->count);
      break;
    case ValueType::kString:
      for (size_t i = 0; i < slot->count; ++i) {
        payload += Delimited(s->bytes[slot->first + i].size());
      }
      slot->list_size = payload;
      break;
  }
  slot->feature_size = Delimited(slot->list_size);
  slot->entry_size = o.key_prefix.size() + Delimited(slot->feature_size);
  return OkStatus();
}

inline bool RowEncoder::ParseScalar(const Output& o, std::string_view cell,
                                    Scratch* s, Scratch::Slot* slot) const {
  if (cell.size() <= max_missing_size_ &&
      (cell.empty() ||
       std::find(missing_.begin(), missing_.end(), cell) != missing_.end())) {
    return false;
  }
  slot->count = 1;
  switch (o.type) {
    case ValueType::kInt: {
      int64_t v;
      if (!FastInt(cell, &v)) return false;
      slot->first = s->ints.size();
      s->ints.push_back(v);
      slot->payload = VarintSize(static_cast<uint64_t>(v));
      slot->list_size = 2 + slot->payload;
      break;
    }
    case ValueType::kFloat: {
      float v;
      if (!FastFloat(cell, &v)) return false;
      slot->first = s->floats.size();
      s->floats.push_back(v);
      slot->list_size = 2 + 4;
      break;
    }
    case ValueType::kString:
      if (FindNonText(cell, /*controls=*/false) != std::string_view::npos) {
        return false;
      }
      slot->first = s->bytes.size();
      s->bytes.push_back(cell);
      slot->list_size = Delimited(cell.size());
      break;
  }
  slot->kind = static_cast<int>(o.type) + 1;
  slot->feature_size = Delimited(slot->list_size);
  slot->entry_size = o.key_prefix.size() + Delimited(slot->feature_size);
  return true;
}

Status RowEncoder::Encode(const CsvRow& row, std::string_view source,
                          Scratch* s, std::string* out) const {
  DTF_RETURN_IF_ERROR(CheckFields(row, source));
  s->slots.resize(outputs_.size());
  s->ints.clear();
  s->floats.clear();
  s->bytes.clear();
  size_t features_size = 0;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Output& o = outputs_[i];
    if (o.scalar_index < 0 ||
        !ParseScalar(o, row.fields[o.scalar_index], s, &s->slots[i])) {
      DTF_RETURN_IF_ERROR(Parse(o, row, source, s, &s->slots[i]));
    }
    if (s->slots[i].kind) features_size += Delimited(s->slots[i].entry_size);
  }
  size_t total = Delimited(features_size);
  size_t start = out->size();
  out->resize(start + total);
  // Locals, not members: writes through char* may alias anything, so the
  // compiler would reload members on every iteration.
  char* p = out->data() + start;
  const Output* outputs = outputs_.data();
  const Scratch::Slot* slots = s->slots.data();
  const size_t n = outputs_.size();
  const int64_t* ints = s->ints.data();
  const float* floats = s->floats.data();
  const std::string_view* bytes = s->bytes.data();
  *p++ = static_cast<char>(
      wire::MakeTag(wire::kExampleFeatures, wire::kLengthDelimited));
  p = wire::EncodeVarint(features_size, p);
  for (size_t i = 0; i < n; ++i) {
    const Scratch::Slot& slot = slots[i];
    if (!slot.kind) continue;
    const Output& o = outputs[i];
    *p++ = kEntryByte;
    p = wire::EncodeVarint(slot.entry_size, p);
    p = Put(p, o.key_prefix);
    *p++ = kValueByte;
    p = wire::EncodeVarint(slot.feature_size, p);
    *p++ = FeatureTag(o.type);
    p = wire::EncodeVarint(slot.list_size, p);
    const size_t first = slot.first, count = slot.count;
    switch (o.type) {
      case ValueType::kInt:
        *p++ = kListByte;
        p = wire::EncodeVarint(slot.payload, p);
        for (size_t k = 0; k < count; ++k) {
          p = wire::EncodeVarint(static_cast<uint64_t>(ints[first + k]), p);
        }
        break;
      case ValueType::kFloat:
        *p++ = kListByte;
        p = wire::EncodeVarint(4 * count, p);
        for (size_t k = 0; k < count; ++k) {
          p = wire::EncodeFixed32(std::bit_cast<uint32_t>(floats[first + k]),
                                  p);
        }
        break;
      case ValueType::kString:
        for (size_t k = 0; k < count; ++k) {
          std::string_view b = bytes[first + k];
          *p++ = kListByte;
          p = wire::EncodeVarint(b.size(), p);
          p = Put(p, b);
        }
        break;
    }
  }
  return OkStatus();
}

}  // namespace dtf
