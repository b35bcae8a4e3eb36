#include "lib/rpc/appending_bio.h"

#include <openssl/bio.h>

namespace dtf::rpc {
namespace {

int OutWrite(BIO* bio, const char* in, int n) {
  static_cast<std::string*>(BIO_get_data(bio))->append(in, size_t(n));
  return n;
}

long OutCtrl(BIO* bio, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
    case BIO_CTRL_WPENDING:
      return long(static_cast<std::string*>(BIO_get_data(bio))->size());
    default:
      return 0;
  }
}

int OutCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* OutMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "dtf TLS stream out");
    BIO_meth_set_write(m, OutWrite);
    BIO_meth_set_ctrl(m, OutCtrl);
    BIO_meth_set_create(m, OutCreate);
    return m;
  }();
  return method;
}

}  // namespace

void* NewAppendingBio(std::string* out) {
  BIO* bio = BIO_new(OutMethod());
  BIO_set_data(bio, out);
  return bio;
}

}  // namespace dtf::rpc
