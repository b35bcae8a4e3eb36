#include "lib/launch/k8s/yaml_writer.h"

namespace dtf::launch::k8s {
namespace {

// Keys are written plain when they are made of these characters and start
// with a letter; otherwise quoted.
bool PlainKey(const std::string& key) {
  if (key.empty()) return false;
  const char first = key[0];
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z'))) {
    return false;
  }
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.' || c == '/';
    if (!ok) return false;
  }
  const bool reserved = key == "y" || key == "n" || key == "yes" ||
                        key == "no" || key == "on" || key == "off" ||
                        key == "true" || key == "false" || key == "null";
  return !reserved;
}

std::string Scalar(const Manifest& v) {
  if (v.is_string()) return v.dump();  // JSON string: a YAML double-quoted one
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();  // numbers, booleans, null
}

bool IsBlock(const Manifest& v) {
  return (v.is_object() || v.is_array()) && !v.empty();
}

void Write(const Manifest& v, int indent, std::string* out);

void WriteMapping(const Manifest& v, int indent, bool first_inline,
                  std::string* out) {
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!(first && first_inline)) out->append(indent, ' ');
    first = false;
    const std::string key =
        PlainKey(it.key()) ? it.key() : Manifest(it.key()).dump();
    out->append(key);
    out->push_back(':');
    if (IsBlock(it.value())) {
      out->push_back('\n');
      // Sequences in a mapping sit at the key's indentation, as kubectl
      // writes them.
      Write(it.value(), it.value().is_array() ? indent : indent + 2, out);
    } else {
      out->push_back(' ');
      out->append(Scalar(it.value()));
      out->push_back('\n');
    }
  }
}

void WriteSequence(const Manifest& v, int indent, std::string* out) {
  for (const Manifest& item : v) {
    out->append(indent, ' ');
    out->append("- ");
    if (item.is_object() && !item.empty()) {
      WriteMapping(item, indent + 2, /*first_inline=*/true, out);
    } else if (item.is_array() && !item.empty()) {
      out->push_back('\n');
      WriteSequence(item, indent + 2, out);
    } else {
      out->append(Scalar(item));
      out->push_back('\n');
    }
  }
}

void Write(const Manifest& v, int indent, std::string* out) {
  if (v.is_object()) {
    WriteMapping(v, indent, /*first_inline=*/false, out);
  } else {
    WriteSequence(v, indent, out);
  }
}

}  // namespace

std::string ToYaml(const Manifest& value) {
  std::string out;
  if (!IsBlock(value)) return Scalar(value) + "\n";
  Write(value, 0, &out);
  return out;
}

}  // namespace dtf::launch::k8s
