// A small pickle machine for torch.save checkpoints (see nvidia_pt_pickle.h).
#include "bert/io/nvidia_pt_pickle.h"

#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

#include "bert/common/error.h"
#include "bert/common/strings.h"
#include "bert/io/tensorbundle_wire.h"

namespace bert::io {

size_t pt_elem_size(PtElem e) {
  switch (e) {
    case PtElem::Float64: case PtElem::Int64: return 8;
    case PtElem::Float32: case PtElem::Int32: return 4;
    case PtElem::Float16: case PtElem::BFloat16: case PtElem::Int16: return 2;
    default: return 1;
  }
}

std::string pt_elem_name(PtElem e) {
  switch (e) {
    case PtElem::Float32: return "float32";
    case PtElem::Float64: return "float64";
    case PtElem::Float16: return "float16";
    case PtElem::BFloat16: return "bfloat16";
    case PtElem::Int64: return "int64";
    case PtElem::Int32: return "int32";
    case PtElem::Int16: return "int16";
    case PtElem::Int8: return "int8";
    case PtElem::UInt8: return "uint8";
    default: return "bool";
  }
}

namespace {

// One Python value. Nodes live in the machine's arena, so shared and even cyclic references
// (a list appended to itself) are plain pointers.
struct Node {
  enum Kind { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Global, Storage, Tensor, Object, Mark } kind = None;
  int64_t i = 0;
  double f = 0;
  std::string s, s2;          // Str/Bytes text; Global module (s) and name (s2); Object class
  std::vector<Node*> items;   // List/Tuple; Dict as key, value, key, value ...
  PtTensor tensor;            // Storage (elem, record, numel) and Tensor
};

class Machine {
 public:
  Machine(std::string_view pickle, std::string record_prefix, std::string where)
      : in_(pickle, where), prefix_(std::move(record_prefix)), where_(std::move(where)) {
    mark_.kind = Node::Mark;
  }

  Node* run();

 private:
  Node* make(Node::Kind k) {
    arena_.push_back(std::make_unique<Node>());
    arena_.back()->kind = k;
    return arena_.back().get();
  }
  [[noreturn]] void fail(const std::string& what) const { throw UserError(where_ + ": " + what); }
  Node* pop() {
    if (stack_.empty()) fail("pickle stack underflow (corrupt data.pkl)");
    Node* n = stack_.back();
    stack_.pop_back();
    if (n->kind == Node::Mark) fail("pickle pops a mark as a value (corrupt data.pkl)");
    return n;
  }
  Node* top() {
    if (stack_.empty() || stack_.back()->kind == Node::Mark) fail("pickle stack underflow (corrupt data.pkl)");
    return stack_.back();
  }
  std::vector<Node*> pop_to_mark() {
    size_t m = stack_.size();
    while (m > 0 && stack_[m - 1]->kind != Node::Mark) --m;
    if (m == 0) fail("pickle has no mark to pop to (corrupt data.pkl)");
    std::vector<Node*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m - 1);
    return items;
  }
  Node* str(std::string_view s) {
    Node* n = make(Node::Str);
    n->s = std::string(s);
    return n;
  }
  Node* integer(int64_t v) {
    Node* n = make(Node::Int);
    n->i = v;
    return n;
  }
  Node* tuple(std::vector<Node*> items) {
    Node* n = make(Node::Tuple);
    n->items = std::move(items);
    return n;
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  Node* memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("pickle refers to memo entry " + std::to_string(key) + " that was never stored");
    return it->second;
  }
  int64_t little_signed(std::string_view b);
  Node* reduce(Node* callable, Node* args);
  Node* persistent_load(Node* pid);
  std::vector<int64_t> int_tuple(Node* n, const char* what);

  ByteReader in_;
  std::string prefix_, where_;
  std::vector<std::unique_ptr<Node>> arena_;
  std::vector<Node*> stack_;
  std::unordered_map<uint64_t, Node*> memo_;
  Node mark_;  // the MARK sentinel on the stack
};

int64_t Machine::little_signed(std::string_view b) {
  if (b.size() > 8) fail("pickle integer wider than 64 bits");
  if (b.empty()) return 0;
  uint64_t v = 0;
  for (size_t k = 0; k < b.size(); ++k) v |= uint64_t(static_cast<unsigned char>(b[k])) << (8 * k);
  if (b.size() < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) v |= ~0ull << (8 * b.size());  // sign-extend
  return static_cast<int64_t>(v);
}

std::vector<int64_t> Machine::int_tuple(Node* n, const char* what) {
  if (n->kind != Node::Tuple && n->kind != Node::List) fail(std::string("tensor ") + what + " is not a tuple");
  if (n->items.size() > 64) fail(std::string("tensor ") + what + " has more than 64 dimensions");
  std::vector<int64_t> out;
  for (Node* x : n->items) {
    if (x->kind != Node::Int) fail(std::string("tensor ") + what + " holds a non-integer");
    out.push_back(x->i);
  }
  return out;
}

Node* Machine::persistent_load(Node* pid) {
  // ('storage', <class torch.FloatStorage>, key, location, numel)
  if (pid->kind != Node::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Node::Str ||
      pid->items[0]->s != "storage")
    fail("unsupported persistent id in pickle (only tensor storages are supported)");
  Node* cls = pid->items[1];
  Node* key = pid->items[2];
  Node* numel = pid->items[4];
  if (cls->kind != Node::Global || key->kind != Node::Str || numel->kind != Node::Int || numel->i < 0)
    fail("malformed storage reference in pickle");
  static const std::vector<std::pair<std::string, PtElem>> kinds = {
      {"FloatStorage", PtElem::Float32}, {"DoubleStorage", PtElem::Float64}, {"HalfStorage", PtElem::Float16},
      {"BFloat16Storage", PtElem::BFloat16}, {"LongStorage", PtElem::Int64}, {"IntStorage", PtElem::Int32},
      {"ShortStorage", PtElem::Int16}, {"CharStorage", PtElem::Int8}, {"ByteStorage", PtElem::UInt8},
      {"BoolStorage", PtElem::Bool}, {"UntypedStorage", PtElem::UInt8}};
  Node* n = make(Node::Storage);
  bool known = false;
  for (const auto& [name, elem] : kinds)
    if (cls->s == "torch" && cls->s2 == name) {
      n->tensor.elem = elem;
      known = true;
    }
  if (!known) fail("unsupported storage type " + cls->s + "." + cls->s2);
  n->tensor.storage_record = prefix_ + "data/" + key->s;
  n->tensor.storage_numel = numel->i;
  return n;
}

Node* Machine::reduce(Node* callable, Node* args) {
  if (args->kind != Node::Tuple) fail("pickle REDUCE without an argument tuple");
  const auto& a = args->items;
  if (callable->kind == Node::Global) {
    const std::string& mod = callable->s;
    const std::string& name = callable->s2;
    if (mod == "collections" && name == "OrderedDict") return make(Node::Dict);
    if (mod == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_tensor")) {
      if (a.size() < 4 || a[0]->kind != Node::Storage || a[1]->kind != Node::Int)
        fail("malformed " + name + " call in pickle");
      Node* t = make(Node::Tensor);
      t->tensor = a[0]->tensor;
      t->tensor.offset = a[1]->i;
      t->tensor.sizes = int_tuple(a[2], "size");
      t->tensor.strides = int_tuple(a[3], "stride");
      return t;
    }
    if (mod == "torch._utils" && starts_with(name, "_rebuild_parameter")) {
      if (a.empty()) fail("malformed " + name + " call in pickle");
      return a[0];  // a Parameter is its data tensor
    }
  }
  Node* o = make(Node::Object);  // anything else: kept, never interpreted
  o->s = callable->kind == Node::Global ? callable->s + "." + callable->s2 : "object";
  return o;
}

Node* Machine::run() {
  while (true) {
    auto op = static_cast<unsigned char>(in_.bytes(1, "pickle opcode")[0]);
    switch (op) {
      case 0x80: in_.bytes(1, "protocol"); break;                      // PROTO
      case 0x95: in_.fixed64("frame size"); break;                     // FRAME
      case '.': {                                                      // STOP
        Node* result = pop();
        return result;
      }
      case '(': stack_.push_back(&mark_); break;                       // MARK
      case 'N': stack_.push_back(make(Node::None)); break;
      case 0x88: case 0x89: {                                          // NEWTRUE / NEWFALSE
        Node* b = make(Node::Bool);
        b->i = op == 0x88;
        stack_.push_back(b);
        break;
      }
      case 'J': stack_.push_back(integer(static_cast<int32_t>(in_.fixed32("BININT")))); break;
      case 'K': stack_.push_back(integer(static_cast<unsigned char>(in_.bytes(1, "BININT1")[0]))); break;
      case 'M': {
        std::string_view b = in_.bytes(2, "BININT2");
        stack_.push_back(integer(static_cast<unsigned char>(b[0]) | (static_cast<unsigned char>(b[1]) << 8)));
        break;
      }
      case 0x8a: stack_.push_back(integer(little_signed(in_.bytes(static_cast<unsigned char>(in_.bytes(1, "LONG1")[0]), "LONG1")))); break;
      case 0x8b: stack_.push_back(integer(little_signed(in_.bytes(in_.fixed32("LONG4"), "LONG4")))); break;
      case 'G': {                                                      // BINFLOAT, big-endian
        std::string_view b = in_.bytes(8, "BINFLOAT");
        uint64_t bits = 0;
        for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
        Node* n = make(Node::Float);
        std::memcpy(&n->f, &bits, 8);
        stack_.push_back(n);
        break;
      }
      case 'X': stack_.push_back(str(in_.bytes(in_.fixed32("BINUNICODE"), "string"))); break;
      case 0x8c: stack_.push_back(str(in_.bytes(static_cast<unsigned char>(in_.bytes(1, "length")[0]), "string"))); break;
      case 0x8d: stack_.push_back(str(in_.bytes(in_.fixed64("BINUNICODE8"), "string"))); break;
      case 'T': stack_.push_back(str(in_.bytes(in_.fixed32("BINSTRING"), "string"))); break;
      case 'U': stack_.push_back(str(in_.bytes(static_cast<unsigned char>(in_.bytes(1, "length")[0]), "string"))); break;
      case 'B': case 'C': case 0x8e: case 0x96: {                      // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
        uint64_t n = op == 'B' ? in_.fixed32("length")
                     : op == 'C' ? static_cast<unsigned char>(in_.bytes(1, "length")[0])
                                 : in_.fixed64("length");
        Node* b = str(in_.bytes(n, "bytes"));
        b->kind = Node::Bytes;
        stack_.push_back(b);
        break;
      }
      case '}': stack_.push_back(make(Node::Dict)); break;
      case ']': case 0x8f: stack_.push_back(make(Node::List)); break;  // EMPTY_LIST, EMPTY_SET
      case ')': stack_.push_back(tuple({})); break;
      case 't': stack_.push_back(tuple(pop_to_mark())); break;
      case 0x85: stack_.push_back(tuple({pop()})); break;
      case 0x86: {
        Node* b = pop();
        Node* a = pop();
        stack_.push_back(tuple({a, b}));
        break;
      }
      case 0x87: {
        Node* c = pop();
        Node* b = pop();
        Node* a = pop();
        stack_.push_back(tuple({a, b, c}));
        break;
      }
      case 'l': case 0x91: {                                           // LIST, FROZENSET
        Node* l = make(Node::List);
        l->items = pop_to_mark();
        stack_.push_back(l);
        break;
      }
      case 'd': {                                                      // DICT
        auto items = pop_to_mark();
        if (items.size() % 2) fail("pickle DICT with an odd number of items");
        Node* d = make(Node::Dict);
        d->items = std::move(items);
        stack_.push_back(d);
        break;
      }
      case 'a': {                                                      // APPEND
        Node* v = pop();
        Node* l = top();
        if (l->kind == Node::List) l->items.push_back(v);
        else if (l->kind != Node::Object) fail("pickle APPEND to a non-list");
        break;
      }
      case 'e': case 0x90: {                                           // APPENDS, ADDITEMS
        auto items = pop_to_mark();
        Node* l = top();
        if (l->kind == Node::List) l->items.insert(l->items.end(), items.begin(), items.end());
        else if (l->kind != Node::Object) fail("pickle APPENDS to a non-list");
        break;
      }
      case 's': {                                                      // SETITEM
        Node* v = pop();
        Node* k = pop();
        Node* d = top();
        if (d->kind == Node::Dict) d->items.insert(d->items.end(), {k, v});
        else if (d->kind != Node::Object) fail("pickle SETITEM on a non-dict");
        break;
      }
      case 'u': {                                                      // SETITEMS
        auto items = pop_to_mark();
        if (items.size() % 2) fail("pickle SETITEMS with an odd number of items");
        Node* d = top();
        if (d->kind == Node::Dict) d->items.insert(d->items.end(), items.begin(), items.end());
        else if (d->kind != Node::Object) fail("pickle SETITEMS on a non-dict");
        break;
      }
      case 'c': {                                                      // GLOBAL "module\nname\n"
        auto line = [&]() {
          std::string s;
          while (true) {
            char c = in_.bytes(1, "GLOBAL")[0];
            if (c == '\n') return s;
            if (s.size() > 1000) fail("pickle GLOBAL name too long");
            s.push_back(c);
          }
        };
        Node* g = make(Node::Global);
        g->s = line();
        g->s2 = line();
        stack_.push_back(g);
        break;
      }
      case 0x93: {                                                     // STACK_GLOBAL
        Node* name = pop();
        Node* mod = pop();
        if (name->kind != Node::Str || mod->kind != Node::Str) fail("pickle STACK_GLOBAL needs two strings");
        Node* g = make(Node::Global);
        g->s = mod->s;
        g->s2 = name->s;
        stack_.push_back(g);
        break;
      }
      case 'R': {                                                      // REDUCE
        Node* args = pop();
        Node* callable = pop();
        stack_.push_back(reduce(callable, args));
        break;
      }
      case 0x81: case 0x92: {                                          // NEWOBJ, NEWOBJ_EX
        if (op == 0x92) pop();
        pop();
        Node* cls = pop();
        Node* o = make(Node::Object);
        o->s = cls->kind == Node::Global ? cls->s + "." + cls->s2 : "object";
        stack_.push_back(o);
        break;
      }
      case 'b': pop(); top(); break;                                   // BUILD: state is not needed
      case 'Q': stack_.push_back(persistent_load(pop())); break;       // BINPERSID
      case 'q': memo_put(static_cast<unsigned char>(in_.bytes(1, "BINPUT")[0])); break;
      case 'r': memo_put(in_.fixed32("LONG_BINPUT")); break;
      case 0x94: memo_put(memo_.size()); break;                        // MEMOIZE
      case 'h': stack_.push_back(memo_get(static_cast<unsigned char>(in_.bytes(1, "BINGET")[0]))); break;
      case 'j': stack_.push_back(memo_get(in_.fixed32("LONG_BINGET"))); break;
      case '0': pop(); break;                                          // POP
      case '1': pop_to_mark(); break;                                  // POP_MARK
      case '2': stack_.push_back(top()); break;                        // DUP
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", op);
        fail(std::string("unsupported pickle opcode ") + buf +
             " (a protocol-0 pickle or an unusual object); re-save the weights with torch.save(state_dict, path)");
      }
    }
  }
}

// Checks that the view (offset, sizes, strides) stays inside a storage of `numel` elements.
void check_view(const PtTensor& t, const std::string& where, const std::string& name) {
  auto fail = [&](const std::string& what) { throw UserError(where + ": tensor '" + name + "' " + what); };
  if (t.sizes.size() != t.strides.size()) fail("has " + std::to_string(t.sizes.size()) + " sizes but " +
                                                std::to_string(t.strides.size()) + " strides");
  if (t.offset < 0) fail("has a negative storage offset");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 4;
  int64_t extent = 0;  // largest element index reached, relative to offset
  bool empty = false;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] < 0 || t.strides[d] < 0) fail("has a negative size or stride");
    if (t.sizes[d] == 0) empty = true;
    if (t.sizes[d] > 0 && t.strides[d] > 0 && (t.sizes[d] - 1) > (kMax - extent) / t.strides[d])
      fail("has an impossibly large shape");
    if (t.sizes[d] > 0) extent += (t.sizes[d] - 1) * t.strides[d];
  }
  if (!empty && (t.offset > kMax || t.offset + extent >= t.storage_numel))
    fail("reaches past the end of its storage (" + std::to_string(t.storage_numel) + " elements)");
}

}  // namespace

int64_t pt_view_span(const PtTensor& t) {
  int64_t extent = 0;
  for (size_t d = 0; d < t.sizes.size() && d < t.strides.size(); ++d) {
    if (t.sizes[d] == 0) return 0;
    extent += (t.sizes[d] - 1) * t.strides[d];
  }
  return extent + 1;
}

PtCheckpoint parse_torch_checkpoint(const ZipArchive& zip) {
  std::string pkl;
  for (const auto& n : zip.names()) {
    auto slash = n.find('/');
    if (slash != std::string::npos && n.substr(slash + 1) == "data.pkl") {
      pkl = n;
      break;
    }
  }
  if (pkl.empty()) throw UserError(zip.where() + ": no data.pkl record; not a torch.save checkpoint");
  std::string prefix = pkl.substr(0, pkl.size() - 8);
  if (zip.has(prefix + "byteorder") && trim(zip.read(prefix + "byteorder")) == "big")
    throw UserError(zip.where() + ": the checkpoint was saved on a big-endian machine, which is not supported");

  Machine m(zip.read(pkl), prefix, zip.where() + ": " + pkl);
  Node* root = m.run();
  if (root->kind != Node::Dict)
    throw UserError(zip.where() + " does not hold a dict; expected torch.save({'model': state_dict}) or a state dict");
  PtCheckpoint out;
  Node* sd = root;
  for (size_t k = 0; k + 1 < root->items.size(); k += 2) {
    Node* key = root->items[k];
    if (key->kind == Node::Str && key->s == "model" && root->items[k + 1]->kind == Node::Dict) {
      sd = root->items[k + 1];
      out.nested = true;
    }
  }
  if (out.nested)
    for (size_t k = 0; k + 1 < root->items.size(); k += 2) {
      Node* key = root->items[k];
      std::string name = key->kind == Node::Str ? key->s : key->kind == Node::Int ? std::to_string(key->i) : "<key>";
      if (name != "model") out.other_keys.push_back(name);
    }
  for (size_t k = 0; k + 1 < sd->items.size(); k += 2) {
    Node* key = sd->items[k];
    Node* value = sd->items[k + 1];
    std::string name = key->kind == Node::Str ? key->s : key->kind == Node::Int ? std::to_string(key->i) : "<key>";
    if (value->kind != Node::Tensor || key->kind != Node::Str) {
      out.non_tensors.push_back(name);
      continue;
    }
    const PtTensor& t = value->tensor;
    if (!zip.has(t.storage_record))
      throw UserError(zip.where() + ": tensor '" + name + "' refers to a missing record " + t.storage_record);
    uint64_t have = zip.read(t.storage_record, false).size();
    uint64_t need = static_cast<uint64_t>(t.storage_numel);
    if (need > have / pt_elem_size(t.elem))
      throw UserError(zip.where() + ": storage " + t.storage_record + " of tensor '" + name + "' holds " +
                      std::to_string(have) + " bytes, less than its " + std::to_string(t.storage_numel) + " " +
                      pt_elem_name(t.elem) + " elements (truncated?)");
    check_view(t, zip.where(), name);
    out.tensors.emplace_back(name, t);
  }
  return out;
}

}  // namespace bert::io
