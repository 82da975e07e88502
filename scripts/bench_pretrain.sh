#!/usr/bin/env bash
# Pretraining throughput: bert-train bench against a Python PyTorch BERT of the same size doing
# the same step (forward, MLM + NSP loss, backward, LAMB update) on the same synthetic batches'
# shapes, interleaved run by run so both see the same machine load. Prints one table row per
# (size, precision) with the median sequences/s of RUNS runs each.
#
#   SIZES="tiny mini base"  PRECISIONS="fp32 bf16"  RUNS=3  SEQ=128  THREADS=0 (all cores)
#   BATCH_tiny=32 BATCH_mini=32 BATCH_base=8   STEPS_<size>=...  WARMUP=2
#   BIN=build/bert-train  PYTHON=/usr/bin/python3 (Debian's python3-torch: the same LibTorch 1.13)
#
# The reference computes the masked-LM head over every position (as HF's BertForPreTraining);
# bert-train gathers the masked positions first (as NVIDIA's implementation does).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/bert-train}
PYTHON=${PYTHON:-/usr/bin/python3}
SIZES=${SIZES:-"tiny mini base"}
PRECISIONS=${PRECISIONS:-"fp32 bf16"}
RUNS=${RUNS:-3}
SEQ=${SEQ:-128}
WARMUP=${WARMUP:-2}
THREADS=${THREADS:-0}
[ -x "$BIN" ] || { echo "error: $BIN not found; build first (scripts/build.sh)" >&2; exit 2; }
"$PYTHON" -c "import torch" 2>/dev/null || { echo "error: $PYTHON has no torch; apt-get install -y python3-torch" >&2; exit 2; }

REF=$(mktemp /tmp/bert_ref_XXXXXX.py)
trap 'rm -f "$REF"' EXIT
cat > "$REF" <<'PY'
# A self-contained BERT-for-pretraining in plain PyTorch (HF layout), timed like `bert-train bench`.
import json, math, statistics, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

cfg = json.load(open(sys.argv[1]))
batch, seq, steps, warmup, precision, threads = (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                                  int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(0)
H, L, A, I, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["intermediate_size"], cfg["vocab_size"]
P = cfg.get("hidden_dropout_prob", 0.1)

class LN(nn.LayerNorm):  # in fp32 under CPU autocast (1.13's CPU autocast leaves layer_norm mixed-type)
    def forward(s, x):
        return super().forward(x.float())

class Layer(nn.Module):
    def __init__(s):
        super().__init__()
        s.q, s.k, s.v, s.o = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        s.ln1, s.ln2 = LN(H, eps=1e-12), LN(H, eps=1e-12)
        s.fc1, s.fc2 = nn.Linear(H, I), nn.Linear(I, H)
    def forward(s, x, bias):
        b, t, _ = x.shape
        sh = lambda y: y.view(b, t, A, H // A).transpose(1, 2)
        att = torch.matmul(sh(s.q(x)), sh(s.k(x)).transpose(-1, -2)) / math.sqrt(H // A) + bias
        ctx = torch.matmul(F.dropout(att.softmax(-1), P, s.training), sh(s.v(x))).transpose(1, 2).reshape(b, t, H)
        x = s.ln1(x + F.dropout(s.o(ctx), P, s.training))
        return s.ln2(x + F.dropout(s.fc2(F.gelu(s.fc1(x))), P, s.training))

class Bert(nn.Module):
    def __init__(s):
        super().__init__()
        s.word, s.pos, s.typ = nn.Embedding(V, H), nn.Embedding(cfg["max_position_embeddings"], H), nn.Embedding(2, H)
        s.ln = LN(H, eps=1e-12)
        s.layers = nn.ModuleList(Layer() for _ in range(L))
        s.pool, s.nsp = nn.Linear(H, H), nn.Linear(H, 2)
        s.tr, s.tr_ln, s.bias = nn.Linear(H, H), LN(H, eps=1e-12), nn.Parameter(torch.zeros(V))
    def forward(s, ids, types, mask, labels, nsp_labels):
        x = s.word(ids) + s.pos(torch.arange(ids.shape[1]))[None] + s.typ(types)
        x = F.dropout(s.ln(x), P, s.training)
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in s.layers:
            x = layer(x, bias)
        # MLM head over every position, as HF does
        logits = F.linear(s.tr_ln(F.gelu(s.tr(x))), s.word.weight, s.bias)
        mlm = F.cross_entropy(logits.float().view(-1, V), labels.view(-1), ignore_index=-100)
        nsp = F.cross_entropy(s.nsp(torch.tanh(s.pool(x[:, 0]))).float(), nsp_labels)
        return mlm + nsp

def lamb_step(params, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-6, wd=0.01, max_norm=1.0):
    grads = [p.grad for _, p in params]
    norm = torch.norm(torch.stack([g.norm() for g in grads]))
    clip = torch.clamp(max_norm / (norm + 1e-12), max=1.0)
    state["t"] += 1
    t = state["t"]
    for (name, p), g in zip(params, grads):
        m, v = state.setdefault(name, (torch.zeros_like(p), torch.zeros_like(p)))
        g = g * clip
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        u = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
        decay = not (name.endswith("bias") or "ln" in name)
        if decay:
            u = u + wd * p
            wn, un = p.norm(), u.norm()
            r = torch.where((wn > 0) & (un > 0), wn / un, torch.ones_like(wn))
        else:
            r = 1.0
        p.data.add_(u * r, alpha=-lr)
        p.grad = None

model = Bert().train()
with torch.no_grad():  # BERT's init: normal(0, 0.02), zero biases, LayerNorm 1/0
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            m.weight.normal_(0.0, cfg.get("initializer_range", 0.02))
        if isinstance(m, nn.Linear):
            m.bias.zero_()
params = list(model.named_parameters())
state = {"t": 0}
gen = torch.Generator().manual_seed(1)
n_mask = min(20, max(1, round(seq * 0.15)))
def make_batch():
    ids = torch.randint(999, V, (batch, seq), generator=gen)
    labels = torch.full((batch, seq), -100, dtype=torch.long)
    for r in range(batch):
        pos = torch.randperm(seq - 2, generator=gen)[:n_mask] + 1
        labels[r, pos] = ids[r, pos]
        ids[r, pos] = 103
    types = torch.zeros_like(ids); types[:, seq // 2:] = 1
    return ids, types, torch.ones_like(ids), labels, torch.randint(0, 2, (batch,), generator=gen)

def step():
    b = make_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=(precision == "bf16")):
        loss = model(*b)
    loss.backward()
    lamb_step(params, state)
    return loss.item()

for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    loss = step()
    times.append(time.perf_counter() - t0)
print(json.dumps({"seq_per_s": batch * steps / sum(times), "median_ms_per_step": 1000 * statistics.median(times),
                  "loss": loss}))
PY

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { "$PYTHON" -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; threads=${THREADS}; seq ${SEQ}; ${RUNS} runs each, interleaved"
printf "| %-5s | %-4s | %5s | %14s | %14s | %13s | %13s | %7s | %6s |\n" size prec batch "bert-train seq/s" "reference seq/s" "bert-train ms" "reference ms" speedup MFU
printf "|-------|------|-------|------------------|-----------------|---------------|---------------|---------|--------|\n"
for size in $SIZES; do
  mcfg=configs/bert_${size}.json
  [ -f "$mcfg" ] || { echo "error: $mcfg not found" >&2; exit 2; }
  bvar=BATCH_$size; svar=STEPS_$size
  case $size in base|large) defb=8; defs=3 ;; *) defb=32; defs=10 ;; esac
  B=${!bvar:-$defb}; S=${!svar:-$defs}
  for prec in $PRECISIONS; do
    ours=(); ref=(); ours_ms=(); ref_ms=(); mfu=()
    for ((r = 0; r < RUNS; r++)); do
      o=$("$BIN" --log-level warn bench --model-config "$mcfg" --precision "$prec" --threads "$THREADS" \
            --max-seq-length "$SEQ" --micro-batch-size "$B" --warmup-steps "$WARMUP" --steps "$S" --json)
      ours+=("$(echo "$o" | field seq_per_s)"); ours_ms+=("$(echo "$o" | field median_ms_per_step)")
      mfu+=("$(echo "$o" | field mfu)")
      p=$("$PYTHON" "$REF" "$mcfg" "$B" "$SEQ" "$S" "$WARMUP" "$prec" "$THREADS")
      ref+=("$(echo "$p" | field seq_per_s)"); ref_ms+=("$(echo "$p" | field median_ms_per_step)")
    done
    mo=$(printf "%s\n" "${ours[@]}" | median); mr=$(printf "%s\n" "${ref[@]}" | median)
    mom=$(printf "%s\n" "${ours_ms[@]}" | median); mrm=$(printf "%s\n" "${ref_ms[@]}" | median)
    mm=$(printf "%s\n" "${mfu[@]}" | median)
    printf "| %-5s | %-4s | %5s | %16.2f | %15.2f | %13.1f | %13.1f | %6.2fx | %5.1f%% |\n" "$size" "$prec" "$B" \
      "$mo" "$mr" "$mom" "$mrm" "$(awk -v a="$mo" -v b="$mr" 'BEGIN {print a / b}')" \
      "$(awk -v m="$mm" 'BEGIN {print m * 100}')"
  done
done
