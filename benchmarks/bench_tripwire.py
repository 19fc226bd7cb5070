"""The crisis tripwire's recall and false flags on its scripts, per part and language, and its speed.

Reads ``tests/pipeline/live/crisis_scripts.yaml`` (or ``--scripts``): recall on every ``*planted`` part, false flags
on every ``*ordinary`` part (``planted``/``ordinary`` tuned in round 1, ``heldout1_*`` held out in round 1 and
development data in round 2, ``dev2_*`` written for round 2); a planted message counts as caught when a signal of
its kind fires. Lists the misses and false flags of every part (``--quiet`` leaves them out) and times the lexicon
per message. The lexicon is the bundled one unless ``$H2H_DATA_DIR`` or ``--lexicon`` names another.

When ``tests/pipeline/live/crisis_heldout2.yaml`` (or ``--heldout2``) exists it is measured too, as parts
``heldout2_planted`` and ``heldout2_ordinary``: the round-2 out-of-sample figure, a set written by someone who never
saw the lexicon (format: ``planted:``/``ordinary:`` lists of ``{text, kind, language}``).

    python benchmarks/bench_tripwire.py [--scripts PATH] [--heldout2 PATH] [--lexicon PATH] [--quiet]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.live.tripwire import CrisisLexicon, crisis_signals, load_crisis_lexicon  # noqa: E402

LIVE_TESTS = Path(__file__).resolve().parent.parent / "tests" / "pipeline" / "live"
SCRIPTS = LIVE_TESTS / "crisis_scripts.yaml"
HELDOUT2 = LIVE_TESTS / "crisis_heldout2.yaml"


def parts(scripts: dict[str, Any]) -> list[tuple[str, str, list[dict[str, str]]]]:
    """(name, measure, messages) for every measured part; measure is "recall" or "false flags"."""
    found = []
    for name, items in scripts.items():
        if name.endswith("planted"):
            found.append((name, "recall", items))
        elif name.endswith("ordinary"):
            found.append((name, "false flags", items))
    return found


def heldout2_parts(path: Path) -> dict[str, Any]:
    """The second held-out set as two parts, ``heldout2_planted`` and ``heldout2_ordinary``; empty when absent."""
    if not path.is_file():
        return {}
    heldout = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {"heldout2_planted": heldout["planted"], "heldout2_ordinary": heldout["ordinary"]}


def hit(item: dict[str, str], lexicon: CrisisLexicon, measure: str) -> bool:
    """Recall: a signal of the planted kind fired. False flags: any signal fired."""
    signals = crisis_signals(item["text"], lexicon=lexicon)
    return any(s.kind == item["kind"] for s in signals) if measure == "recall" else bool(signals)


def row(name: str, measure: str, items: list[dict[str, str]], lexicon: CrisisLexicon) -> tuple[str, list[str]]:
    """One table line (all, zh, en) and the texts that count against the tripwire."""
    cells, against = [], []
    for language in (None, "zh", "en"):
        chosen = [item for item in items if language in (None, item["language"])]
        hits = [item for item in chosen if hit(item, lexicon, measure)]
        share = f" = {len(hits) / len(chosen):.2f}" if measure == "recall" and chosen else ""
        cells.append(f"{len(hits)}/{len(chosen)}{share}")
        if language is None:
            bad = [i for i in chosen if i not in hits] if measure == "recall" else hits
            against = [item["text"] for item in bad]
    return f"{name:<18} {measure:<12} " + " ".join(f"{cell:<14}" for cell in cells), against


def report(scripts: dict[str, Any], lexicon: CrisisLexicon, *, quiet: bool) -> list[str]:
    """Print the table of ``scripts`` (and, unless ``quiet``, what counts against); return all measured texts."""
    print(f"{'part':<18} {'measure':<12} {'all':<14} {'zh':<14} {'en':<14}")
    listed: list[str] = []
    for name, measure, items in parts(scripts):
        line, against = row(name, measure, items, lexicon)
        print(line)
        listed += [f"  {name}: {'missed' if measure == 'recall' else 'flagged'}: {text}" for text in against]
    if listed and not quiet:
        print("messages that count against the tripwire:\n" + "\n".join(listed))
    return [item["text"] for _, _, items in parts(scripts) for item in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", type=Path, default=SCRIPTS)
    parser.add_argument("--heldout2", type=Path, default=HELDOUT2, help="measured too when the file exists")
    parser.add_argument("--lexicon", type=Path, default=None, help="default: the bundled (or $H2H_DATA_DIR) one")
    parser.add_argument("--quiet", action="store_true", help="leave out the list of misses and flags")
    args = parser.parse_args()
    scripts = yaml.safe_load(args.scripts.read_text(encoding="utf-8"))
    lexicon = load_crisis_lexicon(args.lexicon)
    print(f"lexicon {lexicon.path}")
    heldout2 = heldout2_parts(args.heldout2)
    print(f"heldout2 {args.heldout2}: {'measured' if heldout2 else 'absent'}")
    texts = report(scripts | heldout2, lexicon, quiet=args.quiet)
    started = time.perf_counter()
    for text in texts * 20:
        crisis_signals(text, lexicon=lexicon)
    per_message = (time.perf_counter() - started) / (len(texts) * 20)
    print(f"lexicon speed: {per_message * 1e6:.0f} µs per message ({len(texts)} messages x 20)")


if __name__ == "__main__":
    main()
