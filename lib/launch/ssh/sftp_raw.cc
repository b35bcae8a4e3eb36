#include "lib/launch/ssh/sftp_raw.h"

#include <libssh/libssh.h>

#include <cstdint>
#include <set>
#include <string>

#include "lib/base/strings.h"
#include "lib/launch/ssh/ssh_error.h"

namespace dtf::launch::ssh {
namespace {

constexpr size_t kMaxInFlight = 16;
constexpr char kPosixRename[] = "posix-rename@openssh.com";

void PutU32(std::string* out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

void PutU64(std::string* out, uint64_t value) {
  PutU32(out, static_cast<uint32_t>(value >> 32));
  PutU32(out, static_cast<uint32_t>(value));
}

void PutString(std::string* out, std::string_view value) {
  PutU32(out, static_cast<uint32_t>(value.size()));
  out->append(value);
}

uint32_t GetU32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// One SFTP conversation on the session's SFTP channel.
class RawChannel {
 public:
  RawChannel(sftp_session sftp, std::string_view label)
      : sftp_(sftp), label_(label) {}

  uint32_t NextId() { return ++sftp_->id_counter; }

  // Sends a packet of `type` whose body (after the type byte) is `body`.
  Status Send(uint8_t type, std::string_view body) {
    std::string packet;
    packet.reserve(body.size() + 5);
    PutU32(&packet, static_cast<uint32_t>(body.size() + 1));
    packet.push_back(static_cast<char>(type));
    packet.append(body);
    size_t sent = 0;
    while (sent < packet.size()) {
      int n = ssh_channel_write(sftp_->channel, packet.data() + sent,
                                static_cast<uint32_t>(packet.size() - sent));
      if (n <= 0) return SshError(sftp_->session, label_, "SFTP write");
      sent += static_cast<size_t>(n);
    }
    return OkStatus();
  }

  // Reads one SSH_FXP_STATUS reply: its request id and status code.
  Status ReadStatus(uint32_t* id, uint32_t* code) {
    unsigned char header[4];
    DTF_RETURN_IF_ERROR(ReadExact(header, sizeof(header)));
    uint32_t length = GetU32(header);
    if (length < 9 || length > (1u << 20)) {
      return InternalError(
          StrCat(ErrorPrefix(label_), "bad SFTP reply length ", length));
    }
    std::string body(length, '\0');
    DTF_RETURN_IF_ERROR(
        ReadExact(reinterpret_cast<unsigned char*>(body.data()), length));
    const auto* p = reinterpret_cast<const unsigned char*>(body.data());
    if (p[0] != SSH_FXP_STATUS) {
      return InternalError(StrCat(ErrorPrefix(label_),
                                  "unexpected SFTP reply type ", int{p[0]}));
    }
    *id = GetU32(p + 1);
    *code = GetU32(p + 5);
    return OkStatus();
  }

 private:
  Status ReadExact(unsigned char* out, size_t size) {
    size_t done = 0;
    while (done < size) {
      int n = ssh_channel_read(sftp_->channel, out + done,
                               static_cast<uint32_t>(size - done), 0);
      if (n == SSH_ERROR) {
        return SshError(sftp_->session, label_, "SFTP read");
      }
      if (n == 0) {
        if (ssh_channel_is_eof(sftp_->channel)) {
          return UnavailableError(
              StrCat(ErrorPrefix(label_), "the SFTP server went away"));
        }
        return DeadlineExceededError(
            StrCat(ErrorPrefix(label_), "no SFTP reply in time"));
      }
      done += static_cast<size_t>(n);
    }
    return OkStatus();
  }

  sftp_session sftp_;
  std::string_view label_;
};

}  // namespace

Status WritePipelined(sftp_file file, std::string_view label,
                      std::string_view path, const ReadFn& next) {
  RawChannel channel(file->sftp, label);
  std::string_view handle(
      static_cast<const char*>(ssh_string_data(file->handle)),
      ssh_string_len(file->handle));
  std::set<uint32_t> in_flight;
  Status failed = OkStatus();  // the first error; replies are still drained
  std::string data(kSftpChunk, '\0');
  std::string body;
  uint64_t offset = 0;
  bool end = false;
  while (!in_flight.empty() || (!end && failed.ok())) {
    while (!end && failed.ok() && in_flight.size() < kMaxInFlight) {
      StatusOr<size_t> n = next(data.data(), data.size());
      if (!n.ok()) {
        failed = n.status();
        break;
      }
      if (*n == 0) {
        end = true;
        break;
      }
      uint32_t id = channel.NextId();
      body.clear();
      PutU32(&body, id);
      PutString(&body, handle);
      PutU64(&body, offset);
      PutString(&body, std::string_view(data.data(), *n));
      Status sent = channel.Send(SSH_FXP_WRITE, body);
      if (!sent.ok()) return sent;  // the channel is unusable now
      in_flight.insert(id);
      offset += *n;
    }
    if (in_flight.empty()) break;
    uint32_t id = 0;
    uint32_t code = 0;
    DTF_RETURN_IF_ERROR(channel.ReadStatus(&id, &code));
    if (in_flight.erase(id) == 0) {
      return InternalError(
          StrCat(ErrorPrefix(label), "SFTP reply to an unknown request"));
    }
    if (code != SSH_FX_OK && failed.ok()) {
      failed = SftpStatusError(static_cast<int>(code), label, "write", path);
    }
  }
  return failed;
}

Status PosixRename(sftp_session sftp, std::string_view label,
                   const std::string& from, const std::string& to) {
  std::string what = StrCat("rename ", from, " to");
  if (sftp_extension_supported(sftp, kPosixRename, "1")) {
    RawChannel channel(sftp, label);
    uint32_t id = channel.NextId();
    std::string body;
    PutU32(&body, id);
    PutString(&body, kPosixRename);
    PutString(&body, from);
    PutString(&body, to);
    DTF_RETURN_IF_ERROR(channel.Send(SSH_FXP_EXTENDED, body));
    uint32_t reply_id = 0;
    uint32_t code = 0;
    DTF_RETURN_IF_ERROR(channel.ReadStatus(&reply_id, &code));
    if (reply_id != id) {
      return InternalError(
          StrCat(ErrorPrefix(label), "SFTP reply to an unknown request"));
    }
    if (code == SSH_FX_OK) return OkStatus();
    return SftpStatusError(static_cast<int>(code), label, what, to);
  }
  // SFTP version 3 renames refuse an existing target.
  if (sftp_rename(sftp, from.c_str(), to.c_str()) == 0) return OkStatus();
  sftp_attributes target = sftp_lstat(sftp, to.c_str());
  if (target == nullptr) return SftpError(sftp, label, what, to);
  bool is_dir = target->type == SSH_FILEXFER_TYPE_DIRECTORY;
  sftp_attributes_free(target);
  if (is_dir || sftp_unlink(sftp, to.c_str()) != 0 ||
      sftp_rename(sftp, from.c_str(), to.c_str()) != 0) {
    return SftpError(sftp, label, what, to);
  }
  return OkStatus();
}

}  // namespace dtf::launch::ssh
