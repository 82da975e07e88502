// bert-train convert: a Google TF, NVIDIA .pt, HF or bert-train checkpoint -> an HF model
// directory or a Google TF checkpoint, with a report of what was read, skipped and missing.
#include <spdlog/spdlog.h>

#include "bert/io/convert.h"
#include "command.h"

namespace bert::cli {

namespace {

struct ConvertArgs {
  std::string from = "auto", to = "hf", head = "auto", do_lower_case = "auto";
  std::string input, output_dir, model_config, vocab;
  int64_t num_labels = 0;
  std::vector<std::string> labels;
  uint64_t seed = 0;
  bool overwrite = false;
};

int run_convert(const ConvertArgs& a) {
  io::ConvertOptions o;
  o.input = a.input;
  o.output_dir = a.output_dir;
  o.from = io::parse_checkpoint_format(a.from);
  o.to = io::parse_convert_target(a.to);
  o.model_config = a.model_config;
  o.vocab = a.vocab;
  o.head = io::parse_head_kind(a.head);
  o.num_labels = a.num_labels;
  o.labels = a.labels;
  if (a.do_lower_case != "auto") o.do_lower_case = a.do_lower_case == "true";
  o.overwrite = a.overwrite;
  o.seed = a.seed;
  io::log_convert_result(io::convert_checkpoint(o));
  return 0;
}

Action setup_convert(CLI::App& app, GlobalOptions&) {
  auto a = std::make_shared<ConvertArgs>();
  auto* sub = app.add_subcommand("convert", "convert a TF / NVIDIA / HF / bert-train checkpoint to an HF directory or a TF checkpoint");
  sub->add_option("--input", a->input,
                  "checkpoint: directory, .safetensors, .pt/.bin, or TF prefix/.index")
      ->required();
  sub->add_option("--output-dir", a->output_dir, "directory to create with the converted model")->required();
  sub->add_option("--from", a->from, "input format (auto detects it from the path)")
      ->check(CLI::IsMember({"auto", "tf", "hf", "nvidia", "safetensors", "bert-train"}));
  sub->add_option("--to", a->to, "output: hf (config.json, model.safetensors, tokenizer files) or tf (bert_model.ckpt)")
      ->check(CLI::IsMember({"hf", "tf"}));
  sub->add_option("--model-config", a->model_config,
                  "bert_config.json / config.json to use instead of the one found with the input");
  sub->add_option("--vocab", a->vocab, "vocab.txt to ship with the model (default: vocab.txt next to the input)");
  sub->add_option("--head", a->head, "model class: auto (from the source), pretraining, qa, classification")
      ->check(CLI::IsMember({"auto", "pretraining", "qa", "classification"}));
  sub->add_option("--num-labels", a->num_labels, "classification: number of labels (0 = from --labels or the source)")
      ->check(CLI::Range(int64_t(0), int64_t(1000000)));
  sub->add_option("--labels", a->labels, "classification: label names by id, comma separated (e.g. neg,pos)")
      ->delimiter(',');
  sub->add_option("--do-lower-case", a->do_lower_case,
                  "tokenizer casing: auto (source's tokenizer_config.json, else guessed from the vocab), true, false")
      ->check(CLI::IsMember({"auto", "true", "false"}));
  sub->add_option("--seed", a->seed, "seed for weights the source does not have (reported as missing)");
  sub->add_flag("--overwrite", a->overwrite, "replace --output-dir when it is not empty");
  return [a]() { return run_convert(*a); };
}

}  // namespace

BERT_COMMAND(convert, 60, setup_convert);

}  // namespace bert::cli
