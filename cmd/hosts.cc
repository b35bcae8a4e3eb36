// dtf hosts trust: record hosts' SSH host keys in known_hosts after showing
// their fingerprints — what an unknown or changed key at launch asks for.
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/run_common.h"
#include "lib/base/strings.h"
#include "lib/launch/profile.h"
#include "lib/launch/ssh/remote_host.h"
#include "lib/launch/ssh/session.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

struct HostsFlags {
  std::vector<std::string> hosts;
  std::string job = "dtf.toml";
  std::string profile;
  bool replace = false;
  bool check = false;
};

// The target for `host`: the profile's [ssh] table and the host's own
// user=/port= when the profile lists it.
StatusOr<launch::ssh::Target> TargetOf(const HostsFlags& f,
                                       const std::string& host) {
  launch::ssh::Target t;
  t.host = host;
  if (f.profile.empty()) return t;
  DTF_ASSIGN_OR_RETURN(const launch::Profile p,
                       launch::ResolveProfile(
                           fs::path(AbsolutePath(f.job)).parent_path().string(),
                           f.profile, ProfileOptionsFromEnv()));
  t.user = p.ssh.user;
  t.port = p.ssh.port;
  for (const launch::HostEntry& e : p.hosts) {
    if (e.host != host) continue;
    if (e.user) t.user = *e.user;
    if (e.port) t.port = *e.port;
  }
  t.identity_file = p.ssh.identity_file;
  t.known_hosts = p.ssh.known_hosts;
  t.config_file = p.ssh.config;
  t.connect_timeout = std::chrono::seconds(p.ssh.connect_timeout);
  return t;
}

Status RunTrust(const HostsFlags& f) {
  std::vector<std::string> errors;
  for (const std::string& host : f.hosts) {
    StatusOr<launch::ssh::Target> target = TargetOf(f, host);
    if (!target.ok()) return target.status();
    StatusOr<launch::ssh::HostKeyCheck> check =
        launch::ssh::CheckHostKey(*target);
    if (!check.ok()) {
      errors.push_back(std::string(Message(check.status())));
      continue;
    }
    const std::string key =
        StrCat(check->key.type, " ", check->key.fingerprint);
    std::string line;
    if (check->state == "ok") {
      line = StrCat(host, ": ", key, " already in ", check->known_hosts);
    } else if (f.check) {
      line = StrCat(host, ": ", key, " is ", check->state, " in ",
                    check->known_hosts);
    } else if (check->state == "changed" && !f.replace) {
      errors.push_back(StrCat(
          host, ": HOST KEY CHANGED: it now offers ", key,
          ", which differs from ", check->known_hosts,
          "; if the host was reinstalled and this key is right, run again "
          "with --replace"));
      continue;
    } else {
      StatusOr<launch::ssh::HostKey> recorded =
          launch::ssh::TrustHostKey(*target, f.replace);
      if (!recorded.ok()) {
        errors.push_back(std::string(Message(recorded.status())));
        continue;
      }
      line = StrCat(host, ": ", recorded->type, " ", recorded->fingerprint,
                    check->state == "changed" ? " replaces the old key in "
                                              : " recorded in ",
                    check->known_hosts);
    }
    std::fputs((line + "\n").c_str(), stdout);
  }
  DTF_RETURN_IF_ERROR(FlushStdout());
  if (errors.empty()) return OkStatus();
  std::string text;
  for (const std::string& e : errors)
    StrAppend(&text, text.empty() ? "" : "\n", e);
  return FailedPreconditionError(text);
}

}  // namespace

void SetupHosts(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<HostsFlags>();
  CLI::App* sub = app->add_subcommand(
      "hosts", "Manage the SSH host keys of the hosts runs use");
  sub->require_subcommand(1);
  CLI::App* trust = sub->add_subcommand(
      "trust",
      "Show each host's key fingerprint and record it in known_hosts (a "
      "changed key only with --replace)");
  trust->add_option("hosts", f->hosts, "Host names or addresses")->required();
  trust->add_option("--profile", f->profile,
                    "Reach the hosts as this profile says ([ssh] user, port, "
                    "known_hosts; a hostfile's port=)");
  trust->add_option("--job", f->job,
                    "The job file whose profiles/ --profile names (default: "
                    "dtf.toml)");
  trust->add_flag("--replace", f->replace,
                  "Replace a key that changed (after checking the new one)");
  trust->add_flag("--check", f->check,
                  "Only show each key and whether known_hosts has it");
  trust->callback([f, ctx] { ctx->status = RunTrust(*f); });
}

}  // namespace dtf::cli
