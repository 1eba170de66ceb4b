"""DummyTqdm counts like a tqdm bar without drawing one; progress_bar draws one only when asked."""

import pytest

from tianshou.utils.progress_bar import DummyTqdm, progress_bar, tqdm_config


def test_dummy_tqdm_counts_and_ignores_display() -> None:
    with DummyTqdm(total=10, desc="ignored") as bar:
        bar.update(3)
        bar.update()
        bar.set_postfix({"loss": "1.0"}, refresh=False)
        bar.set_description("x")
    assert (bar.n, bar.total) == (4, 10)


def test_tqdm_config_is_accepted_by_tqdm() -> None:
    import io

    import tqdm

    out = io.StringIO()
    with tqdm.tqdm(total=2, file=out, **tqdm_config) as bar:
        bar.update(2)
    assert "2/2" in out.getvalue()


def test_progress_bar_draws_only_when_enabled(capsys: pytest.CaptureFixture) -> None:
    with progress_bar(False, 3, desc="hidden") as bar:
        bar.update(3)
    assert isinstance(bar, DummyTqdm) and bar.n == 3
    with progress_bar(True, 2, desc="shown", unit="epoch") as bar:
        bar.update(2)
    assert "shown: 100%" in capsys.readouterr().err
