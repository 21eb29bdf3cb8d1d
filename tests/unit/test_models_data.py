"""Models and data sets: sizes, shapes, determinism by seed, and that sharding partitions."""

import torch

from workloads import datasets
from workloads.models import INPUT_SHAPES, build_model, param_count


def test_default_cnn_has_about_a_million_parameters():
    n = param_count(build_model("cnn", 0))
    assert 0.9e6 <= n <= 1.1e6  # ~4 MB of float32 gradients per step


def test_models_accept_their_inputs_and_are_deterministic_by_seed():
    for name, shape in INPUT_SHAPES.items():
        a, b, c = build_model(name, 1), build_model(name, 1), build_model(name, 2)
        x = torch.randn(2, *shape)
        assert a(x).shape == (2, 10)
        assert torch.equal(a(x), b(x))
        assert not torch.equal(a(x), c(x))


def test_digits_shapes_split_and_determinism():
    d = datasets.digits(0)
    assert d.x_train.shape[1:] == (1, 8, 8) and d.x_test.shape[1:] == (1, 8, 8)
    assert len(d.y_train) + len(d.y_test) == 1797
    assert len(d.y_test) == 359 and d.num_classes == 10
    assert torch.equal(d.x_test, datasets.digits(0).x_test)
    assert not torch.equal(d.y_test, datasets.digits(1).y_test)
    assert abs(float(d.x_train.mean())) < 1e-4  # standardised on the train split


def test_synthetic_cifar_is_seeded_and_class_structured():
    a, b = datasets.synthetic_cifar(3, 400, 100), datasets.synthetic_cifar(3, 400, 100)
    assert a.x_train.shape == (400, 3, 32, 32) and torch.equal(a.x_train, b.x_train)
    # class means differ far more than noise would make them: learnable structure
    means = torch.stack([a.x_train[a.y_train == c].mean(0) for c in range(10)])
    assert float(means.std(0).mean()) > 0.3


def test_shards_partition_each_epoch_identically_on_every_rank():
    n, world, bs = 103, 4, 5
    seen = [torch.cat(list(datasets.shard_batches(n, r, world, bs, 2, 0))) for r in range(world)]
    flat = torch.cat(seen)
    assert len(flat) == world * datasets.steps_per_epoch(n, world, bs) * bs
    assert len(set(flat.tolist())) == len(flat)  # disjoint
    again = torch.cat(list(datasets.shard_batches(n, 1, world, bs, 2, 0)))
    other = torch.cat(list(datasets.shard_batches(n, 1, world, bs, 3, 0)))
    assert torch.equal(seen[1], again) and not torch.equal(seen[1], other)


def test_mnist1d_is_the_published_split_and_leaves_numpy_seeding_alone():
    import numpy as np

    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    d = datasets.mnist1d(0)
    assert np.random.random() == expected  # make_dataset's global seeding was put back
    assert d.x_train.shape == (4000, 1, 40) and d.x_test.shape == (1000, 1, 40)
    assert d.num_classes == 10 and set(d.y_test.tolist()) == set(range(10))
    assert torch.equal(d.x_test, datasets.mnist1d(5).x_test)  # the published data, any seed
    assert abs(float(d.x_train.mean())) < 1e-4


def test_mnist1d_model_is_small_enough_for_communication_to_share_the_step():
    n = param_count(build_model("mnist1d", 0))
    assert 100_000 <= n <= 200_000  # ~0.5 MiB of gradients: about its compute at 100 Mbit/s
