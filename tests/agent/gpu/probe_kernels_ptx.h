// PTX of two trivial kernels for cupti_device_probe, generated with
//   nvcc -ptx -arch=compute_80 k.cu
// from:
//   extern "C" __global__ void trainscope_probe_spin(float* x, int n, int iters) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) { float v = x[i]; for (int k = 0; k < iters; ++k) v = v * 0.999f + 1.0f; x[i] = v; }
//   }
//   extern "C" __global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL(float* x, int n, int iters) {
//     int i = blockIdx.x * blockDim.x + threadIdx.x;
//     if (i < n) { float v = x[i]; for (int k = 0; k < iters; ++k) v = v * 0.5f + 2.0f; x[i] = v; }
//   }
// The second is named like an NCCL kernel so the probe sees the collective
// path (name classification plus the collective table) on a real GPU.
#ifndef TRAINSCOPE_TESTS_AGENT_GPU_PROBE_KERNELS_PTX_H_
#define TRAINSCOPE_TESTS_AGENT_GPU_PROBE_KERNELS_PTX_H_

inline constexpr char kProbeKernelsPtx[] = R"PTX(

.version 9.0
.target sm_80
.address_size 64

	// .globl	trainscope_probe_spin

.visible .entry trainscope_probe_spin(
	.param .u64 trainscope_probe_spin_param_0,
	.param .u32 trainscope_probe_spin_param_1,
	.param .u32 trainscope_probe_spin_param_2
)
{
	.reg .pred 	%p<7>;
	.reg .f32 	%f<18>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd2, [trainscope_probe_spin_param_0];
	ld.param.u32 	%r9, [trainscope_probe_spin_param_1];
	ld.param.u32 	%r8, [trainscope_probe_spin_param_2];
	mov.u32 	%r10, %ctaid.x;
	mov.u32 	%r11, %ntid.x;
	mov.u32 	%r12, %tid.x;
	mad.lo.s32 	%r1, %r10, %r11, %r12;
	setp.ge.s32 	%p1, %r1, %r9;
	@%p1 bra 	$L__BB0_8;

	cvta.to.global.u64 	%rd3, %rd2;
	mul.wide.s32 	%rd4, %r1, 4;
	add.s64 	%rd1, %rd3, %rd4;
	ld.global.f32 	%f17, [%rd1];
	setp.lt.s32 	%p2, %r8, 1;
	@%p2 bra 	$L__BB0_7;

	add.s32 	%r13, %r8, -1;
	and.b32  	%r15, %r8, 3;
	setp.lt.u32 	%p3, %r13, 3;
	@%p3 bra 	$L__BB0_5;

	sub.s32 	%r14, %r8, %r15;

$L__BB0_4:
	fma.rn.f32 	%f10, %f17, 0f3F7FBE77, 0f3F800000;
	fma.rn.f32 	%f11, %f10, 0f3F7FBE77, 0f3F800000;
	fma.rn.f32 	%f12, %f11, 0f3F7FBE77, 0f3F800000;
	fma.rn.f32 	%f17, %f12, 0f3F7FBE77, 0f3F800000;
	add.s32 	%r14, %r14, -4;
	setp.ne.s32 	%p4, %r14, 0;
	@%p4 bra 	$L__BB0_4;

$L__BB0_5:
	setp.eq.s32 	%p5, %r15, 0;
	@%p5 bra 	$L__BB0_7;

$L__BB0_6:
	.pragma "nounroll";
	fma.rn.f32 	%f17, %f17, 0f3F7FBE77, 0f3F800000;
	add.s32 	%r15, %r15, -1;
	setp.ne.s32 	%p6, %r15, 0;
	@%p6 bra 	$L__BB0_6;

$L__BB0_7:
	st.global.f32 	[%rd1], %f17;

$L__BB0_8:
	ret;

}
	// .globl	ncclDevKernel_AllReduce_Sum_f32_RING_LL
.visible .entry ncclDevKernel_AllReduce_Sum_f32_RING_LL(
	.param .u64 ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_0,
	.param .u32 ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_1,
	.param .u32 ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_2
)
{
	.reg .pred 	%p<7>;
	.reg .f32 	%f<18>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd2, [ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_0];
	ld.param.u32 	%r9, [ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_1];
	ld.param.u32 	%r8, [ncclDevKernel_AllReduce_Sum_f32_RING_LL_param_2];
	mov.u32 	%r10, %ctaid.x;
	mov.u32 	%r11, %ntid.x;
	mov.u32 	%r12, %tid.x;
	mad.lo.s32 	%r1, %r10, %r11, %r12;
	setp.ge.s32 	%p1, %r1, %r9;
	@%p1 bra 	$L__BB1_8;

	cvta.to.global.u64 	%rd3, %rd2;
	mul.wide.s32 	%rd4, %r1, 4;
	add.s64 	%rd1, %rd3, %rd4;
	ld.global.f32 	%f17, [%rd1];
	setp.lt.s32 	%p2, %r8, 1;
	@%p2 bra 	$L__BB1_7;

	add.s32 	%r13, %r8, -1;
	and.b32  	%r15, %r8, 3;
	setp.lt.u32 	%p3, %r13, 3;
	@%p3 bra 	$L__BB1_5;

	sub.s32 	%r14, %r8, %r15;

$L__BB1_4:
	fma.rn.f32 	%f10, %f17, 0f3F000000, 0f40000000;
	fma.rn.f32 	%f11, %f10, 0f3F000000, 0f40000000;
	fma.rn.f32 	%f12, %f11, 0f3F000000, 0f40000000;
	fma.rn.f32 	%f17, %f12, 0f3F000000, 0f40000000;
	add.s32 	%r14, %r14, -4;
	setp.ne.s32 	%p4, %r14, 0;
	@%p4 bra 	$L__BB1_4;

$L__BB1_5:
	setp.eq.s32 	%p5, %r15, 0;
	@%p5 bra 	$L__BB1_7;

$L__BB1_6:
	.pragma "nounroll";
	fma.rn.f32 	%f17, %f17, 0f3F000000, 0f40000000;
	add.s32 	%r15, %r15, -1;
	setp.ne.s32 	%p6, %r15, 0;
	@%p6 bra 	$L__BB1_6;

$L__BB1_7:
	st.global.f32 	[%rd1], %f17;

$L__BB1_8:
	ret;

}

)PTX";

#endif  // TRAINSCOPE_TESTS_AGENT_GPU_PROBE_KERNELS_PTX_H_
