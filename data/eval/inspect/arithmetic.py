"""A small Inspect AI task shipped for `cookbook eval <model> --inspect data/eval/inspect/arithmetic.py@arithmetic`:
six one-line sums, answered by a single generation and scored by `includes()` (the target appears
in the completion), so it needs no network, no dataset download and no grader model.
"""
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message

SUMS = [(2, 2), (3, 5), (10, 7), (6, 6), (12, 30), (9, 1)]


@task
def arithmetic():
    return Task(
        dataset=[Sample(id=f"sum-{i}", input=f"What is {a} + {b}? Answer with the number only.", target=str(a + b)) for i, (a, b) in enumerate(SUMS)],
        solver=[system_message("You are a calculator."), generate()],
        scorer=includes(),
    )
