// The config system: presets load, unknown keys get suggestions, types and ranges are
// checked, and precedence is file < --set < flag.
#include <gtest/gtest.h>

#include "bert/common/error.h"
#include "bert/config/run_config.h"
#include "test_util.h"

using namespace bert;
using bert::test::TempDir;
using bert::test::write_text;

namespace {

std::string user_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no UserError>";
}

}  // namespace

TEST(Config, DefaultsValidate) {
  RunConfig cfg;
  EXPECT_NO_THROW(cfg.validate());
  EXPECT_EQ(cfg.model.hidden_size, 768);
}

TEST(Config, EveryPresetLoadsAndValidates) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(bert::test::source_dir() / "configs")) {
    if (entry.path().extension() != ".json") continue;
    ++n;
    std::string name = entry.path().filename().string();
    if (name.rfind("bert_", 0) == 0) {
      ModelConfig m = load_model_config(entry.path());
      EXPECT_EQ(m.hidden_size % m.num_attention_heads, 0) << name;
    } else {
      ConfigSources src;
      src.config_file = entry.path().string();
      EXPECT_NO_THROW(resolve_config(src)) << name;
    }
  }
  EXPECT_GE(n, 12);
}

TEST(Config, PresetValuesMatchPublishedRecipes) {
  ConfigSources src;
  src.config_file = (bert::test::source_dir() / "configs/pretrain_large_128_phase1.json").string();
  RunConfig p1 = resolve_config(src);
  EXPECT_EQ(p1.train.global_batch_size, 65536);
  EXPECT_DOUBLE_EQ(p1.optimizer.learning_rate, 6e-3);
  EXPECT_DOUBLE_EQ(p1.optimizer.warmup_proportion, 0.2843);
  EXPECT_EQ(p1.train.max_steps, 7038);
  EXPECT_EQ(p1.model.num_hidden_layers, 24);
  src.config_file = (bert::test::source_dir() / "configs/pretrain_large_512_phase2.json").string();
  RunConfig p2 = resolve_config(src);
  EXPECT_EQ(p2.train.global_batch_size, 32768);
  EXPECT_DOUBLE_EQ(p2.optimizer.learning_rate, 4e-3);
  EXPECT_DOUBLE_EQ(p2.optimizer.warmup_proportion, 0.128);
  EXPECT_EQ(p2.train.max_steps, 1563);
  EXPECT_EQ(p2.data.max_seq_length, 512);
  src.config_file = (bert::test::source_dir() / "configs/pretrain_tiny_128_lamb.json").string();
  RunConfig tiny = resolve_config(src);
  EXPECT_EQ(tiny.model.num_hidden_layers, 2);
  EXPECT_EQ(tiny.model.hidden_size, 128);
  EXPECT_EQ(tiny.model.num_attention_heads, 2);
}

TEST(Config, UnknownKeySuggestsClosest) {
  TempDir d;
  write_text(d / "c.json", R"({"model": {"hiden_size": 64}})");
  ConfigSources src;
  src.config_file = (d / "c.json").string();
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("unknown key 'hiden_size'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'hidden_size'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("c.json"), std::string::npos) << msg;
}

TEST(Config, UnknownSectionSuggestsClosest) {
  TempDir d;
  write_text(d / "c.json", R"({"optimiser": {}})");
  ConfigSources src;
  src.config_file = (d / "c.json").string();
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("did you mean 'optimizer'"), std::string::npos) << msg;
}

TEST(Config, WrongTypeNamesKey) {
  TempDir d;
  write_text(d / "c.json", R"({"train": {"seed": "seven"}})");
  ConfigSources src;
  src.config_file = (d / "c.json").string();
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("train.seed must be an integer"), std::string::npos) << msg;
}

TEST(Config, OutOfRangeNamesKeyAndRange) {
  ConfigSources src;
  src.sets = {"model.hidden_dropout_prob=1.5"};
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("hidden_dropout_prob"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(Config, BadChoiceSuggests) {
  ConfigSources src;
  src.sets = {"optimizer.name=lamd"};
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("did you mean 'lamb'"), std::string::npos) << msg;
}

TEST(Config, CrossFieldChecks) {
  ConfigSources src;
  src.sets = {"model.hidden_size=100", "model.num_attention_heads=3"};
  EXPECT_NE(user_error_of([&] { resolve_config(src); }).find("multiple of model.num_attention_heads"),
            std::string::npos);
  src.sets = {"train.global_batch_size=10", "train.micro_batch_size=4"};
  EXPECT_NE(user_error_of([&] { resolve_config(src); }).find("multiple of train.micro_batch_size"),
            std::string::npos);
}

TEST(Config, MissingAndMalformedFiles) {
  ConfigSources src;
  src.config_file = "/nonexistent/run.json";
  EXPECT_NE(user_error_of([&] { resolve_config(src); }).find("not found: /nonexistent/run.json"),
            std::string::npos);
  TempDir d;
  write_text(d / "bad.json", "{\n  \"train\": {\n    \"seed\": 1,,\n  }\n}\n");
  src.config_file = (d / "bad.json").string();
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("not valid JSON (line 3)"), std::string::npos) << msg;
}

TEST(Config, PrecedenceFileThenSetThenFlag) {
  TempDir d;
  write_text(d / "c.json", R"({"train": {"seed": 1, "max_steps": 10}, "optimizer": {"learning_rate": 0.1}})");
  ConfigSources src;
  src.config_file = (d / "c.json").string();
  EXPECT_EQ(resolve_config(src).train.seed, 1);
  src.sets = {"train.seed=2", "optimizer.learning_rate=0.2"};
  RunConfig a = resolve_config(src);
  EXPECT_EQ(a.train.seed, 2);
  EXPECT_EQ(a.train.max_steps, 10);
  EXPECT_DOUBLE_EQ(a.optimizer.learning_rate, 0.2);
  src.flags = {{"train.seed", "3"}};
  RunConfig b = resolve_config(src);
  EXPECT_EQ(b.train.seed, 3);
  EXPECT_DOUBLE_EQ(b.optimizer.learning_rate, 0.2);
}

TEST(Config, SetRejectsMalformedAndUnknown) {
  ConfigSources src;
  src.sets = {"train.seed"};
  EXPECT_NE(user_error_of([&] { resolve_config(src); }).find("section.key=value"), std::string::npos);
  src.sets = {"train.sed=3"};
  std::string msg = user_error_of([&] { resolve_config(src); });
  EXPECT_NE(msg.find("did you mean 'train.seed'"), std::string::npos) << msg;
}

TEST(Config, ModelSectionFromPathAndModelConfigFlag) {
  TempDir d;
  write_text(d / "m.json", R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3,
                                "architectures": ["BertForMaskedLM"], "model_type": "bert",
                                "transformers_version": "4.40.0"})");
  write_text(d / "run.json", R"({"model": "m.json"})");
  ConfigSources src;
  src.config_file = (d / "run.json").string();
  RunConfig cfg = resolve_config(src);
  EXPECT_EQ(cfg.model.hidden_size, 64);
  EXPECT_EQ(cfg.model.num_hidden_layers, 3);
  // --model-config replaces the model section, and --set still wins over it
  src.model_config_file = (bert::test::source_dir() / "configs/bert_mini.json").string();
  src.sets = {"model.num_hidden_layers=2"};
  cfg = resolve_config(src);
  EXPECT_EQ(cfg.model.hidden_size, 256);
  EXPECT_EQ(cfg.model.num_hidden_layers, 2);
}

TEST(Config, GoogleTfCheckpointConfigLoads) {
  BERT_REQUIRE_SHARED_DATA(data);
  ModelConfig m = load_model_config(data / "tf_checkpoint/bert_config.json");
  EXPECT_EQ(m.hidden_size, 4);
  EXPECT_EQ(m.num_hidden_layers, 2);
}

TEST(Config, ModelConfigUnknownKeyIsError) {
  TempDir d;
  write_text(d / "m.json", R"({"hidden_sise": 64})");
  std::string msg = user_error_of([&] { load_model_config(d / "m.json"); });
  EXPECT_NE(msg.find("did you mean 'hidden_size'"), std::string::npos) << msg;
}

TEST(Config, JsonRoundTripAndTable) {
  RunConfig cfg;
  cfg.train.seed = 99;
  cfg.optimizer.lr_table = config::json::parse(R"({"0": 0.001, "100": 0.0005})");
  TempDir d;
  save_config(cfg, d.path);
  ConfigSources src;
  src.config_file = (d / "config.json").string();
  RunConfig back = resolve_config(src);
  EXPECT_EQ(back.to_json(), cfg.to_json());
  std::string table = config_table(cfg);
  EXPECT_NE(table.find("train.seed"), std::string::npos);
  EXPECT_NE(table.find("99"), std::string::npos);
}

TEST(Config, DocsReferenceIsCurrent) {
  std::string doc = bert::test::read_text(bert::test::source_dir() / "docs/config.md");
  EXPECT_NE(doc.find(config_reference_markdown()), std::string::npos)
      << "docs/config.md is out of date: regenerate its reference with `bert-train info --config-reference`";
}
