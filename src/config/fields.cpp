#include "bert/config/fields.h"

#include <cmath>
#include <sstream>

#include "bert/common/error.h"
#include "bert/common/strings.h"

namespace bert::config {

template <class... Ts>
struct overloaded : Ts... { using Ts::operator()...; };
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

std::string Field::type_name() const {
  return std::visit(overloaded{
                        [](int64_t*) { return std::string("an integer"); },
                        [](double*) { return std::string("a number"); },
                        [](bool*) { return std::string("true or false"); },
                        [](std::string*) { return std::string("a string"); },
                        [](std::vector<int64_t>*) { return std::string("a list of integers"); },
                        [](std::vector<double>*) { return std::string("a list of numbers"); },
                        [](std::vector<std::string>*) { return std::string("a list of strings"); },
                        [](json*) { return std::string("JSON"); },
                    },
                    ptr);
}

Field* FieldList::find(const std::string& name) {
  for (auto& f : fields_)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> FieldList::names() const {
  std::vector<std::string> out;
  for (const auto& f : fields_) out.push_back(f.name);
  return out;
}

static std::string json_kind(const json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return "a value";
}

static void assign(Field& fld, const json& v, const std::string& where) {
  auto bad = [&]() {
    throw UserError(where + "." + fld.name + " must be " + fld.type_name() + ", got " + json_kind(v) +
                    " (" + v.dump() + ")");
  };
  std::visit(overloaded{
                 [&](int64_t* p) {
                   if (v.is_number_integer() || v.is_number_unsigned()) {
                     *p = v.get<int64_t>();
                   } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                              std::fabs(v.get<double>()) < 9e15) {
                     *p = static_cast<int64_t>(v.get<double>());
                   } else {
                     bad();
                   }
                 },
                 [&](double* p) {
                   if (!v.is_number()) bad();
                   *p = v.get<double>();
                 },
                 [&](bool* p) {
                   if (!v.is_boolean()) bad();
                   *p = v.get<bool>();
                 },
                 [&](std::string* p) {
                   if (!v.is_string()) bad();
                   *p = v.get<std::string>();
                 },
                 [&](std::vector<int64_t>* p) {
                   if (!v.is_array()) bad();
                   p->clear();
                   for (const auto& e : v) {
                     if (!e.is_number_integer()) bad();
                     p->push_back(e.get<int64_t>());
                   }
                 },
                 [&](std::vector<double>* p) {
                   if (!v.is_array()) bad();
                   p->clear();
                   for (const auto& e : v) {
                     if (!e.is_number()) bad();
                     p->push_back(e.get<double>());
                   }
                 },
                 [&](std::vector<std::string>* p) {
                   if (!v.is_array()) bad();
                   p->clear();
                   for (const auto& e : v) {
                     if (!e.is_string()) bad();
                     p->push_back(e.get<std::string>());
                   }
                 },
                 [&](json* p) { *p = v; },
             },
             fld.ptr);
}

void read_json(FieldList& f, const json& obj, const std::string& where) {
  if (!obj.is_object()) throw UserError(where + " must be a JSON object, got " + json_kind(obj));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    Field* fld = f.find(it.key());
    if (!fld)
      throw UserError("unknown key '" + it.key() + "' in " + where + did_you_mean(it.key(), f.names()));
    assign(*fld, it.value(), where);
  }
}

json write_json(FieldList& f) {
  json out = json::object();
  for (auto& fld : f.fields()) {
    std::visit([&](auto* p) { out[fld.name] = *p; }, fld.ptr);
  }
  return out;
}

void set_from_string(Field& fld, const std::string& value, const std::string& where) {
  // Strings are taken literally; everything else is parsed as JSON
  // (so `--set optimizer.lr_table={"0":1e-3}` and `--set train.seed=7` both work).
  if (std::holds_alternative<std::string*>(fld.ptr)) {
    std::string v = value;
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    *std::get<std::string*>(fld.ptr) = v;
    return;
  }
  json parsed;
  try {
    parsed = json::parse(value);
  } catch (const std::exception&) {
    throw UserError(where + "." + fld.name + " must be " + fld.type_name() + ", got '" + value + "'");
  }
  assign(fld, parsed, where);
}

void validate(FieldList& f, const std::string& where) {
  for (auto& fld : f.fields()) {
    auto check_num = [&](double x) {
      if (!std::isfinite(x) || (fld.lo && x < *fld.lo) || (fld.hi && x > *fld.hi)) {
        std::ostringstream ss;
        ss << where << "." << fld.name << " = " << value_to_string(fld) << " is out of range";
        if (fld.lo && fld.hi)
          ss << " [" << *fld.lo << ", " << *fld.hi << "]";
        else if (fld.lo)
          ss << " (must be >= " << *fld.lo << ")";
        else if (fld.hi)
          ss << " (must be <= " << *fld.hi << ")";
        throw UserError(ss.str());
      }
    };
    std::visit(overloaded{
                   [&](int64_t* p) { check_num(static_cast<double>(*p)); },
                   [&](double* p) { check_num(*p); },
                   [&](std::vector<int64_t>* p) {
                     for (auto x : *p) check_num(static_cast<double>(x));
                   },
                   [&](std::vector<double>* p) {
                     for (auto x : *p) check_num(x);
                   },
                   [&](std::string* p) {
                     if (fld.choices.empty()) return;
                     for (const auto& c : fld.choices)
                       if (c == *p) return;
                     throw UserError(where + "." + fld.name + " = '" + *p + "' is not one of: " +
                                     join(fld.choices, ", ") + did_you_mean(*p, fld.choices));
                   },
                   [&](auto*) {},
               },
               fld.ptr);
  }
}

std::string value_to_string(const Field& fld) {
  return std::visit(overloaded{
                        [](const std::string* p) { return *p; },
                        [](const bool* p) { return std::string(*p ? "true" : "false"); },
                        [](const int64_t* p) { return std::to_string(*p); },
                        [](const double* p) {
                          std::ostringstream ss;
                          ss << *p;
                          return ss.str();
                        },
                        [](auto* p) { return json(*p).dump(); },
                    },
                    fld.ptr);
}

}  // namespace bert::config
