//! Instrumentation engine for AMDGPU kernels (work in progress).
