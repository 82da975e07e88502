#pragma once
// Config fields declared once, used everywhere.
//
// Each component owns a config struct that lists its fields in a `describe` method:
//
//   struct ModelConfig {
//     int64_t hidden_size = 768;
//     void describe(FieldList& f) {
//       f.add("hidden_size", hidden_size, "width of every layer").range(1, 65536);
//     }
//   };
//
// From that one list the config system reads JSON (unknown keys -> error with the closest
// valid key), writes JSON, applies `--set section.key=value`, validates ranges and choices,
// and prints the resolved-settings table.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace bert::config {

using json = nlohmann::ordered_json;

struct Field {
  using Ptr = std::variant<int64_t*, double*, bool*, std::string*, std::vector<int64_t>*,
                           std::vector<double>*, std::vector<std::string>*, json*>;
  std::string name;
  Ptr ptr;
  std::string help;
  std::optional<double> lo, hi;      // inclusive range for numbers
  std::vector<std::string> choices;  // allowed values for strings ("" allowed only if listed)

  Field& range(double l, double h) { lo = l; hi = h; return *this; }
  Field& min(double l) { lo = l; return *this; }
  Field& one_of(std::vector<std::string> c) { choices = std::move(c); return *this; }
  std::string type_name() const;  // "integer", "number", "boolean", "string", ...
};

class FieldList {
 public:
  template <class T>
  Field& add(std::string name, T& value, std::string help) {
    fields_.push_back(Field{std::move(name), &value, std::move(help), {}, {}, {}});
    return fields_.back();
  }
  std::vector<Field>& fields() { return fields_; }
  Field* find(const std::string& name);
  std::vector<std::string> names() const;

 private:
  std::vector<Field> fields_;
};

// Operations over one section. `where` names the source in error messages
// (e.g. "configs/x.json: model").
void read_json(FieldList& f, const json& obj, const std::string& where);
json write_json(FieldList& f);
void set_from_string(Field& field, const std::string& value, const std::string& where);
void validate(FieldList& f, const std::string& where);
std::string value_to_string(const Field& field);

}  // namespace bert::config
