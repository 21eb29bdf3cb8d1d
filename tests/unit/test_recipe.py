"""Training recipes: the schedule's shape, the MNIST-1D net's normalisation, per-model spec
defaults, and a short offline run of the recipe the DDP worker trains."""

import math

import pytest
import torch

from workloads.models import build_model
from workloads.offline import train_offline
from workloads.recipe import RECIPES, LrSchedule, make_optimizer, recipe_for, schedule_for
from workloads.spec import WorkerSpec


def test_cosine_warms_up_linearly_then_decays_to_zero():
    s = LrSchedule("cosine", 0.01, total=100, warmup_steps=10)
    assert s.at(0) == pytest.approx(0.001)  # base / warm-up: never 0
    assert s.at(4) == pytest.approx(0.005)
    assert s.at(9) == s.at(10) == pytest.approx(0.01)  # the peak, then the cosine starts
    assert s.at(55) == pytest.approx(0.005)  # half way down
    assert s.at(99) == pytest.approx(0.005 * (1 + math.cos(math.pi * 89 / 90)))
    assert s.at(100) == 0.0 and s.at(150) == 0.0
    lrs = [s.at(i) for i in range(10, 101)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))
    assert s.decay_steps == ()  # no discrete decays: the phase controller marks none


def test_step_schedule_is_the_digits_demos_and_decays_on_checkpoints():
    r = recipe_for("cnn")
    assert (r.optimizer, r.lr, r.epochs, r.batch_size, r.schedule) == ("sgd", 0.1, 5, 16, "step")
    s = schedule_for(r, 0.1, total=110, steps_per_epoch=22, checkpoint_every=10)
    assert s.decay_steps == (50, 80)
    assert (s.at(0), s.at(49), s.at(50), s.at(80)) == pytest.approx((0.1, 0.1, 0.01, 0.001))


def test_mnist1d_recipe_warms_up_for_whole_epochs_and_runs_ten_or_more():
    r = recipe_for("mnist1d")
    assert r.schedule == "cosine" and r.epochs >= 10
    s = schedule_for(r, r.lr, total=r.epochs * 31, steps_per_epoch=31, checkpoint_every=10)
    assert s.warmup_steps == round(r.warmup_epochs * 31) and s.at(s.warmup_steps) == r.lr


def test_optimizer_follows_the_recipe():
    params = list(build_model("mnist1d", 0).parameters())
    assert isinstance(make_optimizer(recipe_for("mnist1d"), params, 1e-3), torch.optim.AdamW)
    sgd = make_optimizer(recipe_for("cnn"), params, 0.1)
    assert isinstance(sgd, torch.optim.SGD) and sgd.param_groups[0]["momentum"] == 0.9


def test_mnist1d_net_normalises_each_sample_with_groupnorm():
    m = build_model("mnist1d", 0)
    norms = [x for x in m.modules() if isinstance(x, torch.nn.GroupNorm)]
    assert len(norms) == 4
    assert not any(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in m.modules())
    # per sample: a sample's output does not depend on the rest of its batch
    x = torch.randn(8, 1, 40)
    assert torch.allclose(m(x)[:2], m(x[:2]), atol=1e-5)


def test_spec_defaults_come_from_the_models_recipe_and_flags_win():
    for model, r in RECIPES.items():
        w = WorkerSpec(model=model)
        assert (w.lr, w.epochs, w.batch_size) == (r.lr, r.epochs, r.batch_size)
    w = WorkerSpec(model="mnist1d", lr=0.01, epochs=3)
    assert (w.lr, w.epochs, w.batch_size) == (0.01, 3, RECIPES["mnist1d"].batch_size)
    assert WorkerSpec().lr == 0.1  # the digits demo is unchanged


def test_offline_recipe_learns_in_two_epochs():
    torch.set_num_threads(1)
    run = train_offline("mnist1d", 0, world=4, epochs=2)
    assert len(run.accs) == 2 and run.steps == 2 * 31
    assert run.accs[-1] > 0.3  # well above chance (0.1) after 62 steps


def test_offline_run_measures_the_drop_after_warm_up_only():
    from workloads.offline import OfflineRun

    run = OfflineRun([0.5, 0.2, 0.8, 0.9, 0.85, 0.88], warmup_epochs=2.0, seconds=1.0, steps=6)
    assert run.max_drop == pytest.approx(0.05)  # epoch 2's fall is inside the warm-up
    assert run.final == 0.88
