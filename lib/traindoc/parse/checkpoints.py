"""Checkpoint save and load lines into the ``checkpoints`` table.

Each entry of ``CHECKPOINT_PATTERNS`` is (kind, needle, regex); the first match wins. ``kind``
is save_start | saved | loaded. Named groups: ``it`` (iteration), ``path``, ``tag`` (DeepSpeed's
``global_stepN``), ``dur_s`` / ``max_ms`` (how long the save took). The iteration falls back to
``global_stepN`` / ``checkpoint-N`` / ``step-N`` / ``stepN`` / ``iter_NNNNNNN`` / ``step=N`` in
the path.

Wordings, checked against the sources:

- Megatron-LM / Megatron-DeepSpeed (megatron/checkpointing.py, ``print_rank_0``): ``saving
  checkpoint at iteration {:7d} to {} [in {} format]``; ``  successfully saved checkpoint at
  iteration {:7d} to {}`` (older) / ``  successfully saved checkpoint from iteration {:7d} to {}
  [ t 1/8, p 1/1 ]`` (newer); ``  successfully loaded checkpoint from {} [ t 0, p 0 ] at
  iteration {}``; the save timer ``save-checkpoint ....: (40123.45, 40125.67)`` (min, max ms).
- DeepSpeed (runtime/engine.py, checkpoint_engine/torch_checkpoint_engine.py): ``[Rank 0]
  [Torch] Checkpoint global_step10 is about to be saved!``, ``[Rank 0] Saving model checkpoint:
  …/global_step10/mp_rank_00_model_states.pt``, ``[Torch] Checkpoint global_step10 is ready
  now!``, ``[Torch] Loading checkpoint from …/global_step10/…...``.
- HF Trainer (trainer.py): ``Saving model checkpoint to out/checkpoint-500``; on resume
  ``  Continuing training from global step 500``.
- torchtitan (components/checkpoint.py): ``Saving a full checkpoint at step 1000``, ``Finished
  saving the checkpoint (or staging if async is enabled)in 5.53 seconds.``, ``Loading the
  checkpoint at step 1000.``
- Lightning ModelCheckpoint: ``Epoch 3, global step 1000: 'val_loss' reached 0.12 (best 0.12),
  saving model to '/ckpt/epoch=3-step=1000.ckpt' as top 1``.
- Tacotron 2 / WaveGlow / VITS (train.py ``save_checkpoint``): ``Saving model and optimizer
  state at iteration {} to {}``.
- Marian NMT (src/models/encoder_decoder.cpp, training/graph_group.h): ``Saving model weights
  and runtime parameters to model/model.iter55000.npz`` (the update in the path only with
  ``--overwrite`` off), ``[training] Saving training checkpoint to model/model.npz and …``.
- PaddleOCR (ppocr/utils/save_load.py): ``save best model is to {}``, ``save model in {}``
  (no step); PaddleClas, PaddleRec: ``Already save model in {}``.
- BasicSR and mmsr/EDVR (train.py): ``Saving models and training states.`` (no step, no path);
  forks add ``Saving best model and training states.`` for the best validation score.
- A model saved by what it is, no path, no step: ``Saved new best model at epoch 46``
  (placed at the step logged before it).
- A step named in words, any trainer: ``Saving checkpoint for step 100 to '…'...`` and
  ``Checkpoint for step 100 saved successfully`` (OLMo-core), ``Saving checkpoint for step
  N...`` (NeMo-RL), ``Saved a checkpoint at step N.`` and ``Started an asynchronous checkpoint
  save for step N`` (MaxText), ``Saving checkpoint at step N`` (prime-rl, RLinf).
"""

from __future__ import annotations

import re

from .base import LineParser, Row, to_float
from .collectives import RANK_TAG_RE

# the generic save line (the last entries of ``CHECKPOINT_PATTERNS``): a verb of saving next to
# "checkpoint", then "to", "at", "in" or ":" and a path; no other words between them
GENERIC_SAVE_RE = re.compile(
    r"(?<![\w-])(?:[Ss]av(?:ed|ing)|[Ss]ave) (?:the |a )?(?:model )?checkpoints? ?(?:to|at|in|:) "
    r"+['\"]?(?P<path>[^\s'\"]+)"
    r"|(?<![\w-])[Cc]heckpoints? saved ?(?:to|at|in|:) +['\"]?(?P<path2>[^\s'\"]+)")

# a save that names its step in words, any trainer's (``CHECKPOINT_PATTERNS``): "Saving checkpoint
# at step 1000 to gs://…", "Saving checkpoint for step 100 to 's3://b/k'...", "Saving checkpoint
# for step {} at {}", "Saved a checkpoint at step 1000."; the path after it where one follows
STEP_SAVE_RE = re.compile(
    r"(?<![\w-])[Ss]av(?:ing|ed) (?:the |a |an )?(?:model |full |training )?checkpoint (?:at|for) "
    r"(?:global )?(?:step|iteration)\.*\s*(?P<it>\d+)(?![\d.]\d)(?:\.*\s+(?:to|at|in)\s+['\"]?"
    r"(?P<path>[^\s'\"]+))?")

# a save of the model named as such, then where it went (no step: the save belongs to the step
# logged before it, ``diagnose.common.place_unnumbered_saves``): OpenPCDet's tools/train_utils/
# train_utils.py logger.info(f'Save latest model to {ckpt_name}') (its forks: GraphBEV, TED,
# LION), "Epoch 3. Save latest model to ckpt/latest.pth." and "save latest model to: out/
# gpt2_weight.pth" (hand-written loops), "--> Saved individual epoch checkpoint to ckpt/e3.pt",
# "save models to /ckpt/lora-llava-v1.6-vicuna-13b/checkpoint-900" (LLaVA-Med's LoRA trainer)
MODEL_SAVE_RE = re.compile(
    r"(?<![\w-])[Ss]av(?:e|ed|ing) (?:(?:the|a|latest|last|best|final|current|individual|epoch)"
    r" )*(?:models?|weights|checkpoint|ckpt)(?: weights| state)? (?:to|in|into|at)?:? *[\['\"]?"
    r"(?P<path>(?:~|\.{1,2})?/[^\s'\"\]]+|[\w.-]+/[^\s'\"\]]+)")
# a save verb and a checkpoint file, nothing else: "==> Saving ./result/supcon/cifar10/resnet50/
# 5.pt..." (SupContrast-style save_model forks, corpus gpu_crash-byol-v1-supcon-killed-epoch-10),
# "Saving to output/model_epoch_3.pth"
FILE_SAVE_RE = re.compile(
    r"(?<![\w-])[Ss]av(?:ed|ing)(?: to:?)? +['\"]?(?P<path>[^\s'\"]+\.(?:pth|pt|ckpt|pdparams|"
    r"safetensors|h5))(?:\.{0,3}|['\"])\s*$")

# the model saved by what it is, no path and no step (the save belongs to the step or epoch
# logged before it, ``diagnose.common.place_unnumbered_saves``): "Saved new best model at epoch
# 46" (a hand-written loop's logger; DAT550-Animal-CLEF), "Saved best model (val loss 0.31)"
NAMED_SAVE_RE = re.compile(
    r"(?<![\w-])[Ss]aved (?:a |the )?(?:new )?(?:(?:best|final|latest|last|trained) )+"
    r"(?:model|checkpoint|weights)\b(?! (?:config|card|summary|to\b|in\b|into\b))")

CHECKPOINT_PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    # Megatron
    ("saved", "successfully saved checkpoint", re.compile(
        r"successfully saved checkpoint (?:at|from) iteration\s+(?P<it>\d+) to (?P<path>\S+)")),
    ("save_start", "saving checkpoint at iteration", re.compile(
        r"saving checkpoint at iteration\s+(?P<it>\d+) to (?P<path>\S+)")),
    ("loaded", "successfully loaded checkpoint from", re.compile(
        r"successfully loaded checkpoint from (?P<path>\S+)(?: \[[^\]]*\])? at iteration\s+"
        r"(?P<it>\d+)")),
    ("saved", "save-checkpoint", re.compile(
        r"\bsave-checkpoint\b\s*(?:\.+\s*:\s*\((?P<min_ms>[\d.]+),\s*(?P<max_ms>[\d.]+)\)|:\s*"
        r"(?P<ms>[\d.]+))")),
    # DeepSpeed
    ("save_start", "is about to be saved!", re.compile(
        r"Checkpoint (?P<tag>\S+) is about to be saved!")),
    ("saved", "is ready now!", re.compile(r"Checkpoint (?P<tag>\S+) is ready now!")),
    ("save_start", "Saving model checkpoint: ", re.compile(
        r"Saving model checkpoint: (?P<path>\S+)")),
    ("loaded", "Loading checkpoint from ", re.compile(
        r"\[Torch\] Loading checkpoint from (?P<path>\S+?)(?:\.\.\.)?$")),
    # HF Trainer
    ("save_start", "Saving model checkpoint to ", re.compile(
        r"Saving model checkpoint to (?P<path>\S+)")),
    ("loaded", "Continuing training from global step", re.compile(
        r"Continuing training from global step (?P<it>\d+)")),
    # torchtitan
    ("save_start", "Saving a ", re.compile(
        r"Saving a (?:full|model only) checkpoint (?:in \S+ )?at (?:last step, )?step "
        r"(?P<it>\d+)")),
    ("saved", "Finished saving the checkpoint", re.compile(
        r"Finished saving the checkpoint.*?in (?P<dur_s>[\d.]+) ?seconds")),
    ("loaded", "Loading the checkpoint", re.compile(
        r"Loading the checkpoint (?:at step (?P<it>\d+)|from (?P<path>\S+?)\.?$)")),
    # Lightning ModelCheckpoint (callbacks/model_checkpoint.py _update_best_and_save): "Epoch
    # {epoch:d}, global step {step:d}: {monitor!r} reached … saving model to {filepath!r} as
    # top {k}", the step from its words (a filename template may hold none)
    ("saved", "saving model to ", re.compile(
        r"(?:\bglobal step (?P<it>\d+): .*?)?saving model to '(?P<path>[^']+)'")),
    # OpenAI's improved-diffusion and guided-diffusion (train_util.py save(): logger.log(f"saving
    # model {rate}...") once for the model and once for each EMA rate) and the diffusion
    # repositories built on them: no step (the save belongs to the step logged before it)
    ("save_start", "saving model ", re.compile(r"^\s*saving model (?:0|0?\.\d+|1\.0)\.\.\.\s*$")),
    # Tacotron 2, WaveGlow, Flowtron, VITS and their forks (print or logger.info before
    # torch.save): "Saving model and optimizer state at iteration 8416 to ckpt.pt"
    ("save_start", "Saving model and optimizer state at iteration ", re.compile(
        r"Saving model and optimizer state at iteration (?P<it>\d+) to (?P<path>\S+)")),
    # Marian NMT: no update number unless the path has one (model.iter55000.npz); the save
    # belongs to the update logged before it (``diagnose.common.place_unnumbered_saves``)
    ("save_start", "Saving model weights and runtime parameters to ", re.compile(
        r"Saving model weights and runtime parameters to (?P<path>\S+)")),
    ("save_start", "Saving training checkpoint to ", re.compile(
        r"\[training\] Saving training checkpoint to (?P<path>\S+)")),
    # BasicSR and mmsr/EDVR before it (train.py): no step, no path; its forks also print
    # "Saving best model and training states" (AT-BSN, DiffIR-style bounds trainers)
    ("save_start", " and training states", re.compile(
        r"Saving (?:best )?models? and training states")),
    # The Paddle suites (logger.info after paddle.save, no step: the save belongs to the step
    # logged before it): PaddleOCR's ppocr/utils/save_load.py "save best model is to
    # ./output/x/best_accuracy", "save model in ./output/x/latest"; PaddleClas and PaddleRec's
    # "Already save model in output/0"
    ("saved", "save best model is to ", re.compile(r"\bsave best model is to (?P<path>\S+)")),
    ("saved", "save model in ", re.compile(r"\bsave model in (?P<path>\S+)")),
    # Any trainer that names the step in words (``STEP_SAVE_RE``): NVIDIA-NeMo/RL's algorithms
    # (print(f"Saving checkpoint for step {step + 1}..."), OLMo-core's trainer ("Saving
    # checkpoint for step 100 to '…'...", then "Checkpoint for step 100 saved successfully"),
    # prime-rl's logger.info(f"Saving checkpoint at step {progress.step}"), MaxText's
    # max_logging.log(f"Saved a checkpoint at step {step}.") (older "saved a checkpoint at
    # step …"; with async checkpointing "Started an asynchronous checkpoint save for step {step}")
    *((kind, needle, STEP_SAVE_RE) for kind, needle in (
        ("save_start", "aving checkpoint "), ("save_start", "aving a checkpoint "),
        ("saved", "aved a checkpoint "), ("saved", "aved checkpoint "))),
    ("save_start", "checkpoint save for step ", re.compile(
        r"\basynchronous checkpoint save for step (?P<it>\d+)")),
    ("saved", "heckpoint for step ", re.compile(
        r"(?<![\w-])[Cc]heckpoint for step (?P<it>\d+) saved\b")),
    # Any other trainer, hand-written loops included: a save verb and "checkpoint", then where
    # it went ("Saved checkpoint to ckpt/lora_epoch3_step150.pt", "Saving checkpoint to
    # output/model_0000499.pth", "Checkpoint saved to …/step500-unsharded", "Save checkpoint:
    # output/dino"). Last, so that a trainer's own wording above wins; the step comes from the
    # path where it names one, else from the step logged before the save
    # (``diagnose.common.place_unnumbered_saves``).
    *((kind, needle, GENERIC_SAVE_RE) for kind, needle in (
        ("saved", "aved checkpoint"), ("saved", "heckpoint saved"),
        ("save_start", "aving checkpoint"), ("save_start", "ave checkpoint"))),
    # the model saved by name, or a checkpoint file saved with no other words
    # (``MODEL_SAVE_RE``, ``FILE_SAVE_RE``)
    *(("saved", needle, MODEL_SAVE_RE) for needle in (
        "ave latest model", "ave best model", "ave last model", "aved individual",
        "ave model to", "aving model to", "aved model to", "ave models to", "aving models to",
        "aved models to")),
    *(("saved", needle, FILE_SAVE_RE) for needle in ("Saving ", "Saved ", "saving ")),
    # (its "Saving final model..." is left unread: with no line saying the save ended, a
    # failure after it would be read as a partial save)
    *(("saved", needle, NAMED_SAVE_RE) for needle in (
        "aved new ", "aved best ", "aved final ", "aved the ", "aved latest ")),
)

NEEDLES = tuple(dict.fromkeys(p[1] for p in CHECKPOINT_PATTERNS))
# What the loader tests every line for (each pattern's line holds one of these).
LINE_NEEDLES = NEEDLES
PATH_ITER_RE = re.compile(
    r"(?:global_step|checkpoint-|step[-_=]?|iter_|\.iter)(?P<it>\d+)(?=\D|$)"
)


def iteration_in(path: str | None) -> int | None:
    """The iteration a checkpoint path or tag names (global_step100, checkpoint-500, step-10,
    iter_0000845, step=1000), or None."""
    if not path:
        return None
    found = PATH_ITER_RE.findall(path)
    return int(found[-1]) if found else None


def parse_checkpoint(text: str) -> Row | None:
    """A checkpoint save/load line as a ``checkpoints`` row."""
    for kind, needle, regex in CHECKPOINT_PATTERNS:
        if needle not in text:
            continue
        m = regex.search(text)
        if not m:
            continue
        g = m.groupdict()
        path = (g.get("path") or g.get("path2") or "").rstrip(".,'\"") or None
        it = int(g["it"]) if g.get("it") else iteration_in(g.get("tag") or path)
        dur = to_float(g.get("dur_s"))
        if dur is None:
            ms = to_float(g.get("max_ms") or g.get("ms"))
            dur = None if ms is None else ms / 1000.0
        row: Row = {"kind": kind, "iteration": it, "path": path, "duration_s": dur}
        tags = list(RANK_TAG_RE.finditer(text, 0, m.start()))
        tag = tags[-1] if tags else None
        if tag is not None and not tag["pg"]:
            row["rank"] = int(tag["rank"])
        return row
    return None


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "checkpoints",
        "checkpoints",
        LINE_NEEDLES,
        parse_checkpoint,
        example="[default7]:  successfully saved checkpoint at iteration   12600 to "
        "/gpfsscratch/rech/six/commun/checkpoints/tr11-176B-ml/checkpoints/main",
    ),
)
