from tewatch.detect.ratios import Measured, paired_ratios


def test_compiled_over_eager_and_nvfp4_over_bf16_pair_within_one_run():
    measured = [
        Measured("linear.Linear.time", {"mode": "eager", "rank": 3, "recipe": "nvfp4"}, 2.0, (2.0, 2.1)),
        Measured("linear.Linear.time", {"mode": "default", "rank": 3, "recipe": "nvfp4"}, 1.0, (1.0, 1.1)),
        Measured("linear.Linear.time", {"mode": "default", "rank": 2, "recipe": "nvfp4"}, 1.0),  # no eager
        Measured("linear.Linear.time", {"mode": "eager", "rank": 3, "recipe": "bf16"}, 4.0),
    ]
    points = {
        (p.ratio, p.shared_params.get("rank"), p.shared_params.get("recipe"), p.shared_params.get("mode")): p
        for p in paired_ratios(measured, resamples=50)
    }
    compiled = points[("mode:default/eager", 3, "nvfp4", None)]
    assert compiled.value == 0.5 and len(compiled.samples) == 50
    assert points[("recipe:nvfp4/bf16", 3, None, "eager")].value == 0.5
    assert len(points) == 2
