"""Kernel names folded to their family: real names of TE, cuBLAS, CUTLASS, Triton/inductor and PyTorch as
CUPTI and nsys print them (from public profiles, issues and generated code)."""

import pytest

from benchmarks.harness.kernel_names import MAX_CHARS, normalise

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)"
)
COPY_LAMBDA = (
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
    "operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(float)#1} const&)::{lambda(int)#1})"
)
RMSNORM = (
    "void transformer_engine::normalization::rmsnorm_fwd_general_kernel<transformer_engine::normalization::"
    "Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 8192u, 1u, 4u, 1u, 16u, 4u, "
    "transformer_engine::normalization::Kernel_traits_base<8192u, float, __nv_bfloat16, __nv_bfloat16, "
    "float, unsigned int, 128u> >, 0>(transformer_engine::normalization::FwdParams)"
)
CUTLASS3 = (
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedCooperative<"
    "4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative"
    ">, cute::tuple<cute::C<128>, cute::C<256>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, "
    "cute::C<1>, long>, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cute::TiledMMA<cute::"
    "MMA_Atom<cute::SM90_64x256x16_F32BF16BF16_SS<(cute::GMMA::Major)0, (cute::GMMA::Major)0, (cute::GMMA::"
    "ScaleIn)1, (cute::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
    "cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, "
    "cute::Underscore> > >, void, void> >(cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
    "int> >::Params)"
)


@pytest.mark.parametrize(
    ("raw", "family"),
    [
        # PyTorch: vector widths and array sizes are template integers picked per launch
        (
            FILL,
            "at::native::vectorized_elementwise_kernel<N, at::native::FillFunctor<int>, at::detail::Array<char*, N>>",
        ),
        (
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>,"
            " unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native"
            "::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
            "unsigned int, float, 4, 4>)",
            "at::native::reduce_kernel<N, N, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
            "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#N}>"
            ", unsigned int, float, N, N>>",
        ),
        # cuBLAS / cuBLASLt: tile, warp-group and stage shapes chosen by the heuristic
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
            "_kernel__5x_cublas",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesizeNxNxN_warpgroupsizeNxNxN_execute_segment_k_off"
            "_kernel__5x_cublas",
        ),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", "nvjet_tst_NxN_NxN_NxN_h_bz_coopA_NTN"),
        (
            "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
            "ampere_bf16_s16816gemm_bf16_NxN_ldg8_f2f_stages_NxN_nn",
        ),
        # CUTLASS 2 and 3 procedural names: tile and cluster shapes
        (
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align1>(cutlass_80_tensorop_"
            "s1688gemm_128x128_32x3_nn_align1::Params)",
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_NxN_NxN_nn_align1>",
        ),
        (
            "cutlass3x_sm90_tensorop_h64x128x16gemm_f16_f16_f16_void_f16_128x128x64_1x1x1_0_nnn_align8_"
            "warpspecialized_cooperative_epi_tma",
            "cutlass3x_sm90_tensorop_hNxNxNgemm_f16_f16_f16_void_f16_NxNxN_NxNxN_0_nnn_align8_"
            "warpspecialized_cooperative_epi_tma",
        ),
        # Triton kernels of inductor: the _0, _1 ... suffix is the order of generation
        ("triton_poi_fused_add_clone_mul_1", "triton_poi_fused_add_clone_mul"),
        ("triton_red_fused__to_copy_add_mean_pow_0", "triton_red_fused__to_copy_add_mean_pow"),
        ("triton_per_fused_native_layer_norm_12", "triton_per_fused_native_layer_norm"),
        # TE: sizes in the traits fold, the kernel's own name stays; past MAX_CHARS the traits fold whole
        (
            RMSNORM,
            "transformer_engine::normalization::rmsnorm_fwd_general_kernel<transformer_engine::normalization::"
            "Kernel_traits<…>, N>",
        ),
        # copies and memsets name themselves and keep their words
        ("Memcpy DtoH (Device -> Pageable)", "Memcpy DtoH (Device -> Pageable)"),
        ("Memset (Device)", "Memset (Device)"),
        ("kernel_at_0x7f3a1c000000", "kernel_at_0x?"),
    ],
)
def test_real_kernel_names_fold_to_their_family(raw: str, family: str) -> None:
    assert normalise(raw) == family


def test_two_launches_of_one_kernel_that_differ_in_tile_or_suffix_share_a_name() -> None:
    assert normalise("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN") == normalise(
        "nvjet_tst_256x128_64x5_2x1_h_bz_coopA_NTN"
    )
    assert normalise("triton_poi_fused_mul_sigmoid_0") == normalise("triton_poi_fused_mul_sigmoid_3")
    fp8 = "void transformer_engine::detail::cast_kernel<4, __nv_bfloat16, __nv_fp8_e4m3>(float const*)"
    bf16 = "void transformer_engine::detail::cast_kernel<8, __nv_bfloat16, __nv_bfloat16>(float const*)"
    assert normalise(fp8) != normalise(bf16)  # types are the kernel, not the launch
    assert normalise(fp8) == "transformer_engine::detail::cast_kernel<N, __nv_bfloat16, __nv_fp8_e4m3>"


def test_long_names_keep_their_outer_levels_within_the_limit() -> None:
    cutlass = normalise(CUTLASS3)
    assert cutlass == (
        "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<…>, "
        "cutlass::gemm::collective::CollectiveMma<…>, void, void>>"
    )
    copy = normalise(COPY_LAMBDA)
    assert (
        copy
        == "at::native::elementwise_kernel<N, N, at::native::gpu_kernel_impl_nocast<…>(…)::{lambda(…)#N}>"
    )
    assert len(normalise("k<" + "a" * 1000 + ">")) <= MAX_CHARS
    assert normalise(normalise(CUTLASS3)) == cutlass  # folding a folded name changes nothing
