// ALU-bound kernels for the mips example (examples/mips.rs), compiled with
// clang-19 when the example runs. Work-item ids come from the amdgcn builtins,
// so no device library is needed; each loop only computes.
#define WG 256
kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void xorshift_rounds(global const uint* seed, global uint* out, uint rounds) {
  uint i = __builtin_amdgcn_workgroup_id_x() * WG + __builtin_amdgcn_workitem_id_x();
  uint x = seed[i];
  for (uint r = 0; r < rounds; ++r) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x = x * 0x9E3779B1u + r;
  }
  out[i] = x;
}

kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void julia_f32(global const float* cre, global float* out, uint iters) {
  uint i = __builtin_amdgcn_workgroup_id_x() * WG + __builtin_amdgcn_workitem_id_x();
  float cr = cre[i], ci = 0.25f;
  float zr = 0.0f, zi = 0.0f;
  for (uint k = 0; k < iters; ++k) {
    float t = fma(zr, zr, -(zi * zi));
    float u = zr * zi;
    zr = fma(t, 0.5f, cr);
    zi = fma(u, 1.0f, ci);
  }
  out[i] = zr + zi;
}

kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void horner_f64(global const double* x, global double* out, uint terms) {
  uint i = __builtin_amdgcn_workgroup_id_x() * WG + __builtin_amdgcn_workitem_id_x();
  double v = x[i], acc = 0.0;
  for (uint k = 0; k < terms; ++k) acc = fma(acc, v, (double)(k & 7) * 0.125);
  out[i] = acc;
}
