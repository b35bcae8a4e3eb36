// A backend's own part of a record the launch core shares: a profile's
// table (Profile::table) or what a plan carries for its backend
// (Plan::part). The value is of a type of the backend's folder, which only
// that folder reads (lib/launch/slurm/slurm_profile.h: SlurmTableOf); the
// core copies it with what holds it and never looks inside.
#pragma once

#include <any>

namespace dtf::launch {

class BackendPart {
 public:
  // The value if it is a T; nullptr when the part holds nothing or
  // another backend's value.
  template <typename T>
  const T* Get() const {
    return std::any_cast<T>(&value_);
  }
  // The value as a T, made (value-initialised) when the part holds
  // nothing or another type.
  template <typename T>
  T& Mutable() {
    if (std::any_cast<T>(&value_) == nullptr) value_.emplace<T>();
    return *std::any_cast<T>(&value_);
  }
  bool empty() const { return !value_.has_value(); }

 private:
  std::any value_;
};

}  // namespace dtf::launch
