"""`PRESETS`: the papers' models (Madsen & Johansen (2020), Table 4, and the
papers of the other units), by name."""

from keras_nalu.presets.preset import Preset

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("nmu", ("nau", "nmu"), 10.0, 1_000_000, 2_000_000, "NAU → NMU"),
        Preset("nau", ("nau", "nau"), 0.01, 5_000, 50_000, "NAU → NAU"),
        Preset(
            "nau_sparse",
            ("nau", "nau"),
            0.1,
            5_000,
            50_000,
            "NAU → NAU with λ = 0.1 (10× Table 4): discrete weights within 10⁵ steps",
        ),
        Preset("nac", ("nac", "nac"), description="NAC+ → NAC+"),
        Preset("nac_mul", ("nac", "nac_mul"), description="NAC+ → NAC•"),
        Preset("nalu", ("nalu", "nalu"), description="NALU → NALU (shared weights)"),
        Preset("linear", ("linear", "linear"), description="Linear → Linear"),
        Preset("relu", ("relu", "relu"), description="ReLU → ReLU"),
        Preset("relu6", ("relu6", "relu6"), description="ReLU6 → ReLU6"),
        # The reference code's baselines: every Dense layer has a bias
        # (initialized to 0), the ReLUs' kernels are He-uniform.
        Preset(
            "linear_bias",
            ("linear_bias", "linear_bias"),
            description="Linear → Linear with biases (the reference code's Linear)",
        ),
        Preset(
            "relu_bias",
            ("relu_bias", "relu_bias"),
            description="ReLU → ReLU with biases and He-uniform kernels (the "
            "reference code's ReLU)",
        ),
        Preset(
            "relu6_bias",
            ("relu6_bias", "relu6_bias"),
            description="ReLU6 → ReLU6 with biases and He-uniform kernels (the "
            "reference code's ReLU6)",
        ),
        Preset(
            "nac_mul_sigma",
            ("nac", "nac_mul_sigmoid"),
            description=(
                "NAC+ → NAC•σ, W = σ(Ŵ): multiplication only "
                "(Madsen & Johansen 2020, §4.1.3)"
            ),
        ),
        # The reference code's NAC•NMU (`--layer-type ReRegualizedLinearPosNAC
        # --nac-mul normal --first-layer ReRegualizedLinearNAC`) has an NAU
        # below it; Madsen & Johansen's (2020) Table 4 prints NAC+. We follow the code,
        # which produced the paper's numbers.
        Preset(
            "nac_mul_nmu",
            ("nau", "nac_mul_nmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → NAC•NMU, W = clip(Ŵ, 0, 1) with the NMU's sparsity "
            "(Madsen & Johansen 2020, §4.1.3, Table 4; "
            "first layer as the reference code)",
        ),
        Preset(
            "gated_nau_nmu",
            ("nau", "gated_nau_nmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → gated NAU/NMU (Madsen & Johansen 2020, App. C.5, Table 5), "
            "the NMU preset's λ(t)",
        ),
        Preset(
            "nalu_separate",
            ("nac", "nalu_separate"),
            description=(
                "NAC+ → NALU with separate weights "
                "(Madsen & Johansen 2020, App. C.5, Table 5)"
            ),
        ),
        Preset(
            "nalu_shared",
            ("nac", "nalu"),
            description=(
                "NAC+ → NALU with shared weights "
                "(Madsen & Johansen 2020, App. C.5, Table 5)"
            ),
        ),
        Preset(
            "inalu",
            ("inalu", "inalu"),
            description="iNALU → iNALU with gradient clipping ±0.1, the loss-gated "
            "saturation regularizer and reinitialization (Schlör et al. 2020)",
            optimizer_options={"clipvalue": 0.1},
            metrics=("mse",),
            callbacks={
                "LossGatedRegularization": {"monitor": "mse"},
                "Reinitialization": {
                    "every": 10,
                    "loss_threshold": 1.0,
                    "monitor": "mse",
                },
            },
        ),
        Preset(
            "npu",
            ("nau", "npu"),
            0.01,
            5_000,
            50_000,
            "NAU → NPU; λ(t) of the NAU preset for the NAU's sparsity and the "
            "NPU's L1 (Heim et al. 2020)",
        ),
        Preset(
            "real_npu",
            ("nau", "real_npu"),
            0.01,
            5_000,
            50_000,
            "NAU → RealNPU; λ(t) as the npu preset",
        ),
        Preset(
            "snmu",
            ("nau", "snmu"),
            10.0,
            1_000_000,
            2_000_000,
            "NAU → sNMU, noise U[1, 5] in training; the nmu preset's λ(t) "
            "(Mistry et al. 2022)",
        ),
        # The single-module task (one unit from 2 or 10 inputs to the output)
        # of Mistry et al.'s benchmark and division papers: the 2-input
        # recipes (5·10⁴ steps). The 10-input runs move the ramp to
        # 5·10⁴ → 7.5·10⁴ and train 10⁵ steps (sparsity_start/_end).
        Preset(
            "single_nau",
            ("nau",),
            0.01,
            20_000,
            35_000,
            "NAU alone (single-module task)",
        ),
        Preset(
            "single_nmu",
            ("nmu",),
            10.0,
            20_000,
            35_000,
            "NMU alone (single-module task)",
        ),
        Preset(
            "single_snmu",
            ("snmu",),
            10.0,
            20_000,
            35_000,
            "sNMU alone, noise U[1, 5] in training (Mistry et al. 2022)",
        ),
        Preset(
            "single_nmru",
            ("nmru",),
            10.0,
            20_000,
            35_000,
            "NMRU alone: Adam 10⁻², global gradient norm clipped to 1 "
            "(Mistry et al., TMLR 2022)",
            optimizer_options={"global_clipnorm": 1.0},
            learning_rate=1e-2,
        ),
        Preset(
            "single_real_npu",
            ("real_npu",),
            description="RealNPU alone: Adam 5·10⁻³, L1 on every parameter "
            "with β 10⁻⁷ → 10⁻⁵ (×10 every 10⁴ steps), g clipped in the forward "
            "pass only, the benchmark's × recipe",
            learning_rate=5e-3,
            revision=1,
            l1={"strength": 1e-5, "initial_strength": 1e-7, "reduction": "sum"},
        ),
        Preset(
            "single_real_npu_div",
            ("real_npu",),
            description="RealNPU alone, the ÷ recipe: β 10⁻⁹ → 10⁻⁷",
            learning_rate=5e-3,
            revision=1,
            l1={"strength": 1e-7, "initial_strength": 1e-9, "reduction": "sum"},
        ),
        Preset(
            "single_real_npu_modified",
            ("real_npu_modified",),
            1.0,
            40_000,
            50_000,
            "Modified RealNPU alone: Re clipped to [-1, 1], NAU init, g₀ = ½, "
            "mean|1 - |Re|| and mean min(g, 1 - g) ramped, L1 β 10⁻⁹ → 10⁻⁷ "
            "(Mistry et al., TMLR 2022)",
            learning_rate=5e-3,
            l1={"strength": 1e-7, "initial_strength": 1e-9, "reduction": "sum"},
        ),
        Preset(
            "single_mcfc",
            ("mcfc",),
            10.0,
            20_000,
            35_000,
            "MC-FC alone, -mean(p²) ramped (Hoedt et al. 2021)",
        ),
        Preset(
            "single_mcfc_mul",
            ("mcfc_mul",),
            10.0,
            20_000,
            35_000,
            "Log-space MC-FC alone, -mean(p²) ramped (Hoedt et al. 2021)",
        ),
        # The Domain Mixed Unit (Curry 2025): its initialization is chosen by
        # operation (DMU_add for + and ×, DMU_sub for − and ÷), which no
        # other unit of the benchmark is given. Two recipes: the benchmark's
        # default (Adam 10⁻³, no clipping), and the author's table script at
        # the paper's date (Adam 10⁻³, global gradient norm clipped to 0.01).
        Preset(
            "single_dmu_add",
            ("dmu_add",),
            description="DMU_add alone (+, ×): Adam 10⁻³, the benchmark's default",
        ),
        Preset(
            "single_dmu_sub",
            ("dmu_sub",),
            description="DMU_sub alone (−, ÷): Adam 10⁻³, the benchmark's default",
        ),
        Preset(
            "single_dmu_add_author",
            ("dmu_add",),
            description="DMU_add alone (+, ×), the author's recipe: Adam 10⁻³, "
            "global gradient norm clipped to 0.01 (Curry 2025)",
            optimizer_options={"global_clipnorm": 0.01},
            learning_rate=1e-3,
        ),
        Preset(
            "single_dmu_sub_author",
            ("dmu_sub",),
            description="DMU_sub alone (−, ÷), the author's recipe: Adam 10⁻³, "
            "global gradient norm clipped to 0.01 (Curry 2025)",
            optimizer_options={"global_clipnorm": 0.01},
            learning_rate=1e-3,
        ),
    )
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(
            f"Unknown model preset. Expected one of {sorted(PRESETS)}. "
            f"Received: model={name!r}"
        )
    return PRESETS[name]
