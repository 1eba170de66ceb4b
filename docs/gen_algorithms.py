"""The algorithm catalogue of the documentation site, and the pages' tables written from it.

:data:`CATALOGUE` is the one place that says, for every algorithm, its paper, the actions it
takes, whether it honours legal-action masks, its recurrent variant, its example script and its
family page. At every build (``docs/conf.py`` calls :func:`write_algorithm_snippets`) it is
written out as Markdown snippets that the pages include:

- ``_generated/algorithms/table.md``: the landing page's table of all algorithms;
- ``_generated/algorithms/<Name>.md``: one algorithm's entry on its family page (facts, the
  example command, its MuJoCo benchmark results read from
  ``benchmark/results/mujoco-v5/summary.json``, and its constructor's parameters read from the
  code, each linked to the API reference).

So the numbers and parameters on the site are the ones of the code and the committed results.
Importing this module has no side effects.
"""

import inspect
import json
from dataclasses import dataclass
from pathlib import Path

from generated_files import write_if_changed

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARK_SUMMARY = REPO_ROOT / "benchmark/results/mujoco-v5/summary.json"
BENCHMARK_TASKS = ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")


@dataclass(frozen=True)
class Paper:
    """Where an algorithm was published."""

    authors: str
    year: int
    url: str


@dataclass(frozen=True)
class AlgorithmEntry:
    """One algorithm of the catalogue.

    :param name: the class name users import from ``tianshou.algorithm``.
    :param path: the dotted path the API reference documents it under.
    :param family: the stem of its family page under ``algorithms/``.
    :param paper: its paper; None for methods without one.
    :param actions: the action spaces it learns, as text.
    :param observations: the observation spaces it reads, as text (see the Spaces guide for
        the networks ``Dict`` observations need).
    :param masks: whether it honours legal-action masks (see the Spaces guide).
    :param recurrent: the path of its recurrent variant, if one exists.
    :param script: its example script below ``examples/``, if one exists.
    :param benchmark: its key in the MuJoCo benchmark results, if it was benchmarked.
    :param summary: one sentence on what it is and when to use it.
    """

    name: str
    path: str
    family: str
    paper: Paper | None
    actions: str
    masks: bool
    recurrent: str | None
    script: str | None
    benchmark: str | None
    summary: str
    observations: str = "Box, Dict, Discrete"


def arxiv(authors: str, year: int, number: str) -> Paper:
    return Paper(authors, year, f"https://arxiv.org/abs/{number}")


MODELFREE = "tianshou.algorithm.modelfree"
IMITATION = "tianshou.algorithm.imitation"
BOX, DISCRETE = "Box", "Discrete"
STRUCTURED = "any"
"""Discrete, Box, MultiDiscrete, MultiBinary, and Tuple/Dict of those (see the Spaces guide)."""

CATALOGUE: tuple[AlgorithmEntry, ...] = (
    AlgorithmEntry(
        name="Reinforce",
        path=f"{MODELFREE}.reinforce.Reinforce",
        family="policy_gradient",
        paper=Paper("Williams", 1992, "https://doi.org/10.1007/BF00992696"),
        actions=STRUCTURED,
        masks=True,
        recurrent=None,
        script="mujoco/mujoco_reinforce.py",
        benchmark="reinforce",
        summary="The plain policy gradient on Monte-Carlo returns: the simplest baseline.",
    ),
    AlgorithmEntry(
        name="A2C",
        path=f"{MODELFREE}.a2c.A2C",
        family="policy_gradient",
        paper=arxiv("Mnih et al.", 2016, "1602.01783"),
        actions=STRUCTURED,
        masks=True,
        recurrent=f"{MODELFREE}.recurrent_ppo.RecurrentA2C",
        script="mujoco/mujoco_a2c.py",
        benchmark="a2c",
        summary="A policy gradient with a learned value baseline (GAE advantages), synchronous.",
    ),
    AlgorithmEntry(
        name="PPO",
        path=f"{MODELFREE}.ppo.PPO",
        family="policy_gradient",
        paper=arxiv("Schulman et al.", 2017, "1707.06347"),
        actions=STRUCTURED,
        masks=True,
        recurrent=f"{MODELFREE}.recurrent_ppo.RecurrentPPO",
        script="mujoco/mujoco_ppo.py",
        benchmark="ppo",
        summary=(
            "Clipped policy updates over several epochs of each batch: the robust default on-"
            "policy choice."
        ),
    ),
    AlgorithmEntry(
        name="NPG",
        path=f"{MODELFREE}.npg.NPG",
        family="policy_gradient",
        paper=Paper(
            "Kakade",
            2001,
            "https://proceedings.neurips.cc/paper/2001/hash/4b86abe48d358ecf194c56c69108433e-Abstract.html",
        ),
        actions=STRUCTURED,
        masks=True,
        recurrent=None,
        script="mujoco/mujoco_npg.py",
        benchmark="npg",
        summary=(
            "The natural policy gradient: a step of fixed KL size along the Fisher-preconditioned"
            " gradient."
        ),
    ),
    AlgorithmEntry(
        name="TRPO",
        path=f"{MODELFREE}.trpo.TRPO",
        family="policy_gradient",
        paper=arxiv("Schulman et al.", 2015, "1502.05477"),
        actions=STRUCTURED,
        masks=True,
        recurrent=None,
        script="mujoco/mujoco_trpo.py",
        benchmark="trpo",
        summary=(
            "The natural gradient step with a line search that keeps the KL divergence within a "
            "trust region."
        ),
    ),
    AlgorithmEntry(
        name="DDPG",
        path=f"{MODELFREE}.ddpg.DDPG",
        family="continuous_off_policy",
        paper=arxiv("Lillicrap et al.", 2015, "1509.02971"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="mujoco/mujoco_ddpg.py",
        benchmark="ddpg",
        summary="A deterministic actor trained through a Q-critic, with exploration noise.",
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="TD3",
        path=f"{MODELFREE}.td3.TD3",
        family="continuous_off_policy",
        paper=arxiv("Fujimoto et al.", 2018, "1802.09477"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="mujoco/mujoco_td3.py",
        benchmark="td3",
        summary="DDPG with twin critics, delayed actor updates and target-policy smoothing.",
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="SAC",
        path=f"{MODELFREE}.sac.SAC",
        family="continuous_off_policy",
        paper=arxiv("Haarnoja et al.", 2018, "1801.01290"),
        actions=BOX,
        masks=False,
        recurrent=f"{MODELFREE}.recurrent_sac.RecurrentSAC",
        script="mujoco/mujoco_sac.py",
        benchmark="sac",
        summary=(
            "A stochastic actor maximising return plus entropy, with twin critics: sample-"
            "efficient and stable."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="REDQ",
        path=f"{MODELFREE}.redq.REDQ",
        family="continuous_off_policy",
        paper=arxiv("Chen et al.", 2021, "2101.05982"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="mujoco/mujoco_redq.py",
        benchmark=None,
        summary=(
            "SAC with an ensemble of critics and many updates per env step: for when env steps "
            "are expensive."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="DQN",
        path=f"{MODELFREE}.dqn.DQN",
        family="q_learning",
        paper=Paper("Mnih et al.", 2015, "https://doi.org/10.1038/nature14236"),
        actions=DISCRETE,
        masks=True,
        recurrent=f"{MODELFREE}.recurrent_dqn.RecurrentDQN",
        script="atari/atari_dqn.py",
        benchmark=None,
        summary=(
            "Q-learning with a network, a replay buffer and a target network (n-step, double and "
            "dueling variants)."
        ),
    ),
    AlgorithmEntry(
        name="C51",
        path=f"{MODELFREE}.c51.C51",
        family="q_learning",
        paper=arxiv("Bellemare et al.", 2017, "1707.06887"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_c51.py",
        benchmark=None,
        summary="Distributional Q-learning on a fixed support of 51 atoms.",
    ),
    AlgorithmEntry(
        name="RainbowDQN",
        path=f"{MODELFREE}.rainbow.RainbowDQN",
        family="q_learning",
        paper=arxiv("Hessel et al.", 2018, "1710.02298"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_rainbow.py",
        benchmark=None,
        summary="C51 with noisy networks, dueling heads, n-step returns and prioritized replay.",
    ),
    AlgorithmEntry(
        name="QRDQN",
        path=f"{MODELFREE}.qrdqn.QRDQN",
        family="q_learning",
        paper=arxiv("Dabney et al.", 2018, "1710.10044"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_qrdqn.py",
        benchmark=None,
        summary="Distributional Q-learning by quantile regression on fixed quantile fractions.",
    ),
    AlgorithmEntry(
        name="IQN",
        path=f"{MODELFREE}.iqn.IQN",
        family="q_learning",
        paper=arxiv("Dabney et al.", 2018, "1806.06923"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_iqn.py",
        benchmark=None,
        summary="Distributional Q-learning on sampled quantile fractions (implicit quantiles).",
    ),
    AlgorithmEntry(
        name="FQF",
        path=f"{MODELFREE}.fqf.FQF",
        family="q_learning",
        paper=arxiv("Yang et al.", 2019, "1911.02140"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_fqf.py",
        benchmark=None,
        summary="IQN whose quantile fractions are proposed by a learned network.",
    ),
    AlgorithmEntry(
        name="BDQN",
        path=f"{MODELFREE}.bdqn.BDQN",
        family="q_learning",
        paper=arxiv("Tavakoli et al.", 2018, "1711.08946"),
        actions="MultiDiscrete (branches)",
        masks=True,
        recurrent=None,
        script=None,
        benchmark=None,
        summary=(
            "Action branching: one Q-head per action dimension, for large factored discrete "
            "actions."
        ),
    ),
    AlgorithmEntry(
        name="DiscreteSAC",
        path=f"{MODELFREE}.discrete_sac.DiscreteSAC",
        family="q_learning",
        paper=arxiv("Christodoulou", 2019, "1910.07207"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script="atari/atari_sac.py",
        benchmark=None,
        summary=(
            "SAC for discrete actions: the soft value is an exact expectation over the actions."
        ),
    ),
    AlgorithmEntry(
        name="BCQ",
        path=f"{IMITATION}.bcq.BCQ",
        family="offline_imitation",
        paper=arxiv("Fujimoto et al.", 2019, "1812.02900"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="offline/minari_bcq.py",
        benchmark=None,
        summary=(
            "Offline RL that acts only near the data's actions (a VAE of the behaviour plus a "
            "perturbation)."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="CQL",
        path=f"{IMITATION}.cql.CQL",
        family="offline_imitation",
        paper=arxiv("Kumar et al.", 2020, "2006.04779"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="offline/minari_cql.py",
        benchmark=None,
        summary=(
            "Offline SAC with a conservative penalty that pushes down Q-values of unseen actions."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="TD3BC",
        path=f"{IMITATION}.td3_bc.TD3BC",
        family="offline_imitation",
        paper=arxiv("Fujimoto & Gu", 2021, "2106.06860"),
        actions=BOX,
        masks=False,
        recurrent=None,
        script="offline/minari_td3_bc.py",
        benchmark=None,
        summary=(
            "Offline TD3 with a behaviour-cloning term in the actor's loss: minimal and strong."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="DiscreteBCQ",
        path=f"{IMITATION}.discrete_bcq.DiscreteBCQ",
        family="offline_imitation",
        paper=arxiv("Fujimoto et al.", 2019, "1910.01708"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script=None,
        benchmark=None,
        summary=(
            "Offline Q-learning restricted to actions the data's behaviour policy takes often "
            "enough."
        ),
    ),
    AlgorithmEntry(
        name="DiscreteCQL",
        path=f"{IMITATION}.discrete_cql.DiscreteCQL",
        family="offline_imitation",
        paper=arxiv("Kumar et al.", 2020, "2006.04779"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script=None,
        benchmark=None,
        summary="Conservative Q-learning on a QR-DQN for discrete actions.",
    ),
    AlgorithmEntry(
        name="DiscreteCRR",
        path=f"{IMITATION}.discrete_crr.DiscreteCRR",
        family="offline_imitation",
        paper=arxiv("Wang et al.", 2020, "2006.15134"),
        actions=DISCRETE,
        masks=True,
        recurrent=None,
        script=None,
        benchmark=None,
        summary=(
            "Critic-regularised regression: behaviour cloning weighted by the critic's advantage."
        ),
    ),
    AlgorithmEntry(
        name="GAIL",
        path=f"{IMITATION}.gail.GAIL",
        family="offline_imitation",
        paper=arxiv("Ho & Ermon", 2016, "1606.03476"),
        actions="Box, Discrete",
        masks=False,
        recurrent=None,
        script=None,
        benchmark=None,
        summary=(
            "Imitation by PPO on the reward of a discriminator between expert and policy "
            "transitions."
        ),
        observations="Box, Dict",
    ),
    AlgorithmEntry(
        name="OfflineImitationLearning",
        path=f"{IMITATION}.imitation_base.OfflineImitationLearning",
        family="offline_imitation",
        paper=None,
        actions="Box, Discrete",
        masks=True,
        recurrent=None,
        script="offline/minari_bc.py",
        benchmark=None,
        summary=(
            "Behaviour cloning from a fixed data set (``OffPolicyImitationLearning`` clones "
            "online)."
        ),
    ),
    AlgorithmEntry(
        name="ICMOffPolicyWrapper",
        path="tianshou.algorithm.modelbased.icm.ICMOffPolicyWrapper",
        family="exploration",
        paper=arxiv("Pathak et al.", 2017, "1705.05363"),
        actions="as the wrapped algorithm",
        masks=True,
        recurrent=None,
        script="atari/atari_dqn.py --icm-lr-scale 1",
        benchmark=None,
        summary=(
            "Adds a curiosity reward (an intrinsic curiosity module) to any off-policy algorithm;"
            " ``ICMOnPolicyWrapper`` to on-policy ones."
        ),
        observations="as the wrapped algorithm",
    ),
    AlgorithmEntry(
        name="PSRL",
        path="tianshou.algorithm.modelbased.psrl.PSRL",
        family="exploration",
        paper=arxiv("Osband et al.", 2013, "1306.0940"),
        actions=DISCRETE,
        masks=False,
        recurrent=None,
        script=None,
        benchmark=None,
        summary="Posterior sampling of a tabular MDP model: exploration for small discrete tasks.",
        observations="Discrete",
    ),
)

FAMILY_TITLES = {
    "policy_gradient": "Policy gradient (on-policy)",
    "continuous_off_policy": "Off-policy actor-critic (continuous actions)",
    "q_learning": "Q-learning (discrete actions)",
    "offline_imitation": "Offline RL and imitation",
    "exploration": "Curiosity and model-based exploration",
}


def api_link(path: str, text: str | None = None) -> str:
    """A MyST link to an object's entry in the API reference."""
    return f"{{py:obj}}`{text} <{path}>`" if text else f"{{py:obj}}`~{path}`"


def paper_link(paper: Paper | None) -> str:
    return "—" if paper is None else f"[{paper.authors} {paper.year}]({paper.url})"


def load_benchmark(summary_path: Path = BENCHMARK_SUMMARY) -> dict[tuple[str, str], dict]:
    """The benchmark cells by ``(algorithm key, task)``; empty if no results are committed."""
    if not summary_path.is_file():
        return {}
    cells = json.loads(summary_path.read_text())["cells"]
    return {(cell["algorithm"], cell["task"]): cell for cell in cells}


def benchmark_cell(cells: dict[tuple[str, str], dict], key: str | None) -> str:
    """The landing table's benchmark column: the IQM final return on each task, linked."""
    if key is None:
        return "—"
    values = []
    for task in BENCHMARK_TASKS[:3]:
        cell = cells.get((key, task))
        values.append(f"{cell['final_return']['iqm']:,.0f}" if cell else "—")
    return f"[{' / '.join(values)}](benchmark.md)"


def landing_table(cells: dict[tuple[str, str], dict]) -> str:
    """The algorithms for the landing page, a small table per family under the family's name
    (links relative to ``docs/``, where the page that includes it lies); the benchmark column
    only for families that were benchmarked."""
    lines = []
    for family, title in FAMILY_TITLES.items():
        entries = [entry for entry in CATALOGUE if entry.family == family]
        benchmarked = any(entry.benchmark is not None for entry in entries)
        header = "| algorithm | paper | observations → actions | masks | recurrent | example |"
        rule = "|---|---|---|:---:|---|---|"
        if benchmarked:
            header, rule = header + " MuJoCo final return |", rule + "---|"
        lines += [f"### [{title}](algorithms/{family}.md)", "", header, rule]
        for entry in entries:
            recurrent = api_link(entry.recurrent) if entry.recurrent else "—"
            example = f"`{entry.script.split('/')[-1]}`" if entry.script else "—"
            row = (
                f"| {api_link(entry.path, entry.name)} | {paper_link(entry.paper)} | "
                f"{entry.observations} → {entry.actions} | {'yes' if entry.masks else '—'} | "
                f"{recurrent} | {example} |"
            )
            if benchmarked:
                row += f" {benchmark_cell(cells, entry.benchmark)} |"
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


def parameter_list(path: str) -> str:
    """The constructor's keyword parameters with their defaults, from the code."""
    module_name, _, class_name = path.rpartition(".")
    cls = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    parts = []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = parameter.default
        shown = "" if default is inspect.Parameter.empty else f"={default!r}"
        parts.append(f"`{name}{shown}`")
    return ", ".join(parts)


def benchmark_table(cells: dict[tuple[str, str], dict], key: str) -> str:
    """One algorithm's MuJoCo results, a row per task."""
    rows = [
        "| task | seeds | env steps | final return IQM [95% CI] | final return mean ± std |",
        "|---|---:|---:|---:|---:|",
    ]
    for task in BENCHMARK_TASKS:
        cell = cells.get((key, task))
        if cell is None:
            continue
        final = cell["final_return"]
        ci = final.get("iqm_ci95")
        interval = f" [{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else ""
        rows.append(
            f"| {task} | {len(cell['seeds'])} | {max(cell['env_steps']):,} | "
            f"{final['iqm']:,.0f}{interval} | {final['mean']:,.0f} ± {final['std']:,.0f} |"
        )
    return "\n".join(rows) + "\n"


def entry_snippet(entry: AlgorithmEntry, cells: dict[tuple[str, str], dict]) -> str:
    """One algorithm's section body on its family page."""
    lines = [
        entry.summary,
        "",
        f"- **API:** {api_link(entry.path)}; **paper:** {paper_link(entry.paper)}",
        f"- **observations:** {entry.observations}; **actions:** {entry.actions}; "
        "**legal-action masks:** "
        f"{'honoured' if entry.masks else 'not applicable'}"
        + (f"; **recurrent variant:** {api_link(entry.recurrent)}" if entry.recurrent else ""),
        f"- **parameters** (each explained in its {api_link(entry.path, 'API entry')}): "
        f"{parameter_list(entry.path)}",
        "",
    ]
    if entry.script is not None:
        lines += ["```bash", f"python examples/{entry.script}", "```", ""]
    if entry.benchmark is not None and any((entry.benchmark, t) in cells for t in BENCHMARK_TASKS):
        lines += ["Our MuJoCo results (see [the benchmark](../benchmark.md)):", ""]
        lines += [benchmark_table(cells, entry.benchmark)]
    return "\n".join(lines)


def write_algorithm_snippets(out_dir: Path) -> None:
    """Write the landing table and every algorithm's snippet into ``out_dir``.

    :param out_dir: usually ``docs/_generated/algorithms``.
    """
    cells = load_benchmark()
    write_if_changed(out_dir / "table.md", landing_table(cells))
    for entry in CATALOGUE:
        write_if_changed(out_dir / f"{entry.name}.md", entry_snippet(entry, cells))
