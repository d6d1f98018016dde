// A hipSPARSE client: y = alpha * A * x + beta * y with hipsparseDcsrmv
// (rocSPARSE underneath) on a banded matrix with a dense row, checked
// against the same product on the host.
#include "common.h"
#include <hipsparse/hipsparse.h>
#include <vector>

#define SPARSE(call)                                                              \
    do {                                                                          \
        hipsparseStatus_t st_ = (call);                                           \
        if (st_ != HIPSPARSE_STATUS_SUCCESS) {                                    \
            fprintf(stderr, "%s:%d: %s: hipsparse status %d\n", __FILE__, __LINE__, #call, \
                    (int)st_);                                                    \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

int main() {
    const int m = 257, n = 257;
    std::vector<int> row_ptr(m + 1, 0), col;
    std::vector<double> val;
    for (int r = 0; r < m; r++) {
        if (r == 100) {
            for (int c = 0; c < n; c++) {  // one dense row
                col.push_back(c);
                val.push_back(1.0 / (c + 1));
            }
        } else {
            for (int c = r - 2; c <= r + 2; c++) {
                if (c < 0 || c >= n) continue;
                col.push_back(c);
                val.push_back(c == r ? 4.0 : -1.0 + 0.001 * r);
            }
        }
        row_ptr[r + 1] = (int)col.size();
    }
    const int nnz = (int)col.size();
    std::vector<double> x(n), y0(m), want(m), y(m);
    for (int i = 0; i < n; i++) x[i] = 1.0 + (i % 9) * 0.25;
    for (int i = 0; i < m; i++) y0[i] = -(double)i;
    const double alpha = 2.0, beta = 0.25;
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
    HIP(hipMemcpy(d_y, y0.data(), m * sizeof(double), hipMemcpyHostToDevice));

    hipsparseHandle_t handle;
    hipsparseMatDescr_t descr;
    SPARSE(hipsparseCreate(&handle));
    SPARSE(hipsparseCreateMatDescr(&descr));
    SPARSE(hipsparseDcsrmv(handle, HIPSPARSE_OPERATION_NON_TRANSPOSE, m, n, nnz, &alpha, descr,
                           d_val, d_row, d_col, d_x, &beta, d_y));
    HIP(hipMemcpy(y.data(), d_y, m * sizeof(double), hipMemcpyDeviceToHost));
    check_equal("hipsparseDcsrmv", y.data(), want.data(), m, 1e-12);
    SPARSE(hipsparseDestroyMatDescr(descr));
    SPARSE(hipsparseDestroy(handle));
    HIP(hipFree(d_row));
    HIP(hipFree(d_col));
    HIP(hipFree(d_val));
    HIP(hipFree(d_x));
    HIP(hipFree(d_y));
    return finish("hipsparse_csrmv");
}
