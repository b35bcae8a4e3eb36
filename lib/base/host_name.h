// Host names and addresses as dtf's inputs write them: the host of a
// cluster spec's "host:port", a hostfile line's host, a local profile's bind
// address. One checker with one rule per kind of input; each input keeps
// the rule it has always had.
#pragma once

#include <cstddef>
#include <string_view>

namespace dtf {

enum class HostRule {
  // A DNS name or an IPv4 address: ASCII letters, digits, '.', '-' and '_'.
  // No length limit; a leading '-' is allowed. The host of "host:port" in
  // --cluster_spec, TF_CONFIG and dtf serve's flags (an IPv6 address goes in
  // brackets there and is checked with IsIpv6Address).
  kName,
  // kName plus ':', '[' and ']' (IPv6, bare or bracketed, as ssh takes it),
  // at most 253 bytes, not starting with '-' (which ssh would read as an
  // option). Hostfiles and a profile's `hosts`.
  kSshHost,
  // Any byte but ':', '/', '[', ']', space, tab and control characters
  // (below 0x20); the system resolver judges the rest. The address a local
  // profile's tasks bind (`host = ...`).
  kBindAddress,
};

// Whether `host` is non-empty and follows `rule`.
bool IsValidHost(std::string_view host, HostRule rule);

// The offset of the first byte of `host` that `rule` does not allow, or
// std::string_view::npos when there is none, so that a message can name it.
// Does not check the length or a leading '-' (IsValidHost does).
size_t FindInvalidHostChar(std::string_view host, HostRule rule);

// Whether `address`, the text between '[' and ']' of "[address]:port", is an
// IPv6 address: hex digits, ':' and '.' with at least one ':', then
// optionally "%zone" with a non-empty kName zone ("fe80::1%eth0").
bool IsIpv6Address(std::string_view address);

// The host of "host:port" or "[v6]:port", without the brackets; `address`
// itself when it has no ':'.
std::string_view HostOfAddress(std::string_view address);

}  // namespace dtf
