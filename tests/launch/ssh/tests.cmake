# lib/launch/ssh against real OpenSSH servers that the tests start on
# 127.0.0.x (tests/launch/ssh/sshd.sh); they skip where /usr/sbin/sshd is
# missing.
dtf_test(launch_ssh_test
  SOURCES launch/ssh/session_test.cc launch/ssh/host_key_test.cc
          launch/ssh/sftp_test.cc launch/ssh/tunnel_test.cc
          launch/ssh/tunnel_grpc_test.cc launch/ssh/host_link_test.cc
          launch/ssh/remote_tls_test.cc launch/ssh/remote_ship_test.cc
          launch/ssh/preflight_ssh_test.cc
          launch/ssh/sshd_fixture.cc
  LIBS dtf_launch dtf_proto_grpc PkgConfig::LIBZIP
  LABELS slow)
