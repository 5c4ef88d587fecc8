"""The reference's true_thinking_score recipe (tinker-cookbook 0.6.1) on the cases tts.parity.test.ts
sends on stdin. Prints one JSON object:

- segments: segment_cot_steps and is_self_verification_step of each text;
- perturbed: perturb_numbers of each text list, in order, from one random.Random(seed);
- cots: compute_tts_for_cot run whole on each CoT with a real renderer and tokenizer, against a
  sampling client whose compute_logprobs is a fixed function of the tokens (given below, mirrored by
  the test): every token sequence it was asked to score, and the StepTTS fields and summary();
- analysis: analyze.cli_main with the problems and each problem's TTSResult handed in (the dataset
  and the model calls stubbed), its tts_per_problem.jsonl rows and tts_summary.json;
- problems: analyze._load_problems on local rows (load_dataset stubbed to read them);
- fixed / rounded: f"{x:.{d}f}" and round(x, d)."""

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

from transformers import AutoTokenizer

from tinker_cookbook import renderers
from tinker_cookbook.recipes.true_thinking_score import analyze, tts


def fake_logprobs(tokens: list[int]) -> list[float | None]:
    """Position 0 unscored as compute_logprobs' first entry; the rest a fixed function of (token, position)."""
    return [None] + [-((t * 31 + i * 17) % 97) / 50 for i, t in enumerate(tokens) if i > 0]


class FakeSampler:
    def __init__(self) -> None:
        self.inputs: list[list[int]] = []

    async def compute_logprobs(self, model_input):
        tokens = model_input.to_ints()
        self.inputs.append(tokens)
        return fake_logprobs(tokens)


def step_dict(s: tts.StepTTS) -> dict:
    return {
        "step_index": s.step_index,
        "step_text": s.step_text,
        "tts": s.tts,
        "s1_c1": s.s1_c1,
        "s0_c1": s.s0_c1,
        "s1_c0": s.s1_c0,
        "s0_c0": s.s0_c0,
        "is_self_verification": s.is_self_verification,
    }


async def score_cots(cases: dict) -> list[dict]:
    tok = AutoTokenizer.from_pretrained(cases["tokenizer_dir"])
    renderer = renderers.get_renderer(cases["renderer"], tokenizer=tok)
    out = []
    for c in cases["cots"]:
        sampler = FakeSampler()
        result = await tts.compute_tts_for_cot(sampler, renderer, c["question"], c["answer"], c["cot"], seed=c["seed"])  # type: ignore[arg-type]
        out.append(
            {
                "inputs": sorted(sampler.inputs),
                "steps": [step_dict(s) for s in result.step_scores],
                "summary": result.summary(),
            }
        )
    return out


def run_analysis(case: dict) -> dict:
    problems = case["problems"]

    async def fake_generate(service_client, model_name, question, answer_str, **kwargs):
        p = next(p for p in problems if p["question"] == question)
        if "error" in p:
            raise RuntimeError(p["error"])
        steps = [tts.StepTTS(step_index=i, step_text=f"step {i}", tts=t, s1_c1=s1, s0_c1=0.0, s1_c0=0.0, s0_c0=0.0, is_self_verification=sv) for i, (t, s1, sv) in enumerate(p["steps"])]
        # compute_tts_for_cot's verdict
        model_correct = steps[-1].s1_c1 > 0.5 if steps else False
        return tts.TTSResult(question=question, answer=answer_str, cot_text="", step_scores=steps, model_correct=model_correct)

    analyze._load_problems = lambda dataset, n, seed: [{"question": p["question"], "answer": p["answer"]} for p in problems]  # type: ignore[assignment]
    analyze.generate_cot_and_compute_tts = fake_generate  # type: ignore[assignment]
    analyze.tinker.ServiceClient = lambda **kwargs: None  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as d:
        config = analyze.CLIConfig(model_name=case["model"], dataset=case["dataset"], n_problems=len(problems), log_path=d)
        asyncio.run(analyze.cli_main(config))
        rows = [json.loads(line) for line in (Path(d) / "tts_per_problem.jsonl").read_text().splitlines()]
        summary = json.loads((Path(d) / "tts_summary.json").read_text())
    return {"rows": rows, "summary": summary}


_LOAD_PROBLEMS = analyze._load_problems


def load_problems(case: dict) -> list[dict]:
    rows = [json.loads(line) for line in Path(case["file"]).read_text().splitlines() if line.strip()]
    analyze.load_dataset = lambda *args, **kwargs: rows  # type: ignore[assignment]
    return _LOAD_PROBLEMS(case["dataset"], case["n"], case["seed"])


def perturb_sequence(texts: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for t in texts:
        try:
            out.append(tts.perturb_numbers(t, rng))
        except OverflowError:
            out.append("OverflowError")
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    print(
        json.dumps(
            {
                "segments": [[[s, tts.is_self_verification_step(s)] for s in tts.segment_cot_steps(t)] for t in cases["segment"]],
                "has_numbers": [tts.has_numbers(t) for t in cases["segment"]],
                "perturbed": [perturb_sequence(c["texts"], c["seed"]) for c in cases["perturb"]],
                "cots": asyncio.run(score_cots(cases)),
                "problems": [load_problems(c) for c in cases["problems"]],
                "analysis": [run_analysis(c) for c in cases["analysis"]],
                "fixed": [f"{x:.{d}f}" for x, d in cases["fixed"]],
                "rounded": [round(x, d) for x, d in cases["fixed"]],
            }
        )
    )


if __name__ == "__main__":
    main()
