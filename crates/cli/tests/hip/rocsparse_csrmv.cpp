// A rocSPARSE client: y = alpha * A * x + beta * y with rocsparse_dcsrmv on
// a random sparse matrix, without and with the analysis step (the adaptive
// kernels), checked against the same product on the host.
#include "common.h"
#include <rocsparse/rocsparse.h>
#include <vector>

#define SPARSE(call)                                                              \
    do {                                                                          \
        rocsparse_status st_ = (call);                                            \
        if (st_ != rocsparse_status_success) {                                    \
            fprintf(stderr, "%s:%d: %s: rocsparse status %d\n", __FILE__, __LINE__, #call, \
                    (int)st_);                                                    \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

int main() {
    const int m = 300, n = 200;
    // A deterministic pseudo-random pattern, 1 to 12 entries per row, one row empty.
    std::vector<int> row_ptr(m + 1, 0), col;
    std::vector<double> val;
    unsigned seed = 12345;
    auto next = [&]() { return seed = seed * 1103515245u + 12345u; };
    for (int r = 0; r < m; r++) {
        int k = r == 7 ? 0 : 1 + (int)(next() >> 16) % 12;
        int c = (int)(next() >> 16) % 7;
        for (int j = 0; j < k && c < n; j++) {
            col.push_back(c);
            val.push_back(((int)(next() >> 16) % 2001 - 1000) / 64.0);
            c += 1 + (int)(next() >> 16) % 23;
        }
        row_ptr[r + 1] = (int)col.size();
    }
    const int nnz = (int)col.size();
    std::vector<double> x(n), y0(m), want(m);
    for (int i = 0; i < n; i++) x[i] = (i % 17) * 0.125 - 1.0;
    for (int i = 0; i < m; i++) y0[i] = (i % 5) * 0.5;
    const double alpha = 1.5, beta = -0.5;
    for (int r = 0; r < m; r++) {
        double s = 0;
        for (int j = row_ptr[r]; j < row_ptr[r + 1]; j++) s += val[j] * x[col[j]];
        want[r] = alpha * s + beta * y0[r];
    }

    int *d_row, *d_col;
    double *d_val, *d_x, *d_y;
    HIP(hipMalloc(&d_row, (m + 1) * sizeof(int)));
    HIP(hipMalloc(&d_col, nnz * sizeof(int)));
    HIP(hipMalloc(&d_val, nnz * sizeof(double)));
    HIP(hipMalloc(&d_x, n * sizeof(double)));
    HIP(hipMalloc(&d_y, m * sizeof(double)));
    HIP(hipMemcpy(d_row, row_ptr.data(), (m + 1) * sizeof(int), hipMemcpyHostToDevice));
    HIP(hipMemcpy(d_col, col.data(), nnz * sizeof(int), hipMemcpyHostToDevice));
    HIP(hipMemcpy(d_val, val.data(), nnz * sizeof(double), hipMemcpyHostToDevice));
    HIP(hipMemcpy(d_x, x.data(), n * sizeof(double), hipMemcpyHostToDevice));

    rocsparse_handle handle;
    rocsparse_mat_descr descr;
    rocsparse_mat_info info;
    SPARSE(rocsparse_create_handle(&handle));
    SPARSE(rocsparse_create_mat_descr(&descr));
    SPARSE(rocsparse_create_mat_info(&info));
    std::vector<double> y(m);

    // Plain CSR-vector kernels.
    HIP(hipMemcpy(d_y, y0.data(), m * sizeof(double), hipMemcpyHostToDevice));
    SPARSE(rocsparse_dcsrmv(handle, rocsparse_operation_none, m, n, nnz, &alpha, descr, d_val, d_row,
                            d_col, nullptr, d_x, &beta, d_y));
    HIP(hipMemcpy(y.data(), d_y, m * sizeof(double), hipMemcpyDeviceToHost));
    check_equal("csrmv", y.data(), want.data(), m, 1e-12);

    // Adaptive kernels, after the analysis.
    SPARSE(rocsparse_dcsrmv_analysis(handle, rocsparse_operation_none, m, n, nnz, descr, d_val,
                                     d_row, d_col, info));
    HIP(hipMemcpy(d_y, y0.data(), m * sizeof(double), hipMemcpyHostToDevice));
    SPARSE(rocsparse_dcsrmv(handle, rocsparse_operation_none, m, n, nnz, &alpha, descr, d_val, d_row,
                            d_col, info, d_x, &beta, d_y));
    HIP(hipMemcpy(y.data(), d_y, m * sizeof(double), hipMemcpyDeviceToHost));
    check_equal("csrmv adaptive", y.data(), want.data(), m, 1e-12);

    SPARSE(rocsparse_destroy_mat_info(info));
    SPARSE(rocsparse_destroy_mat_descr(descr));
    SPARSE(rocsparse_destroy_handle(handle));
    HIP(hipFree(d_row));
    HIP(hipFree(d_col));
    HIP(hipFree(d_val));
    HIP(hipFree(d_x));
    HIP(hipFree(d_y));
    return finish("rocsparse_csrmv");
}
