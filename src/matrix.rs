//! Dense matrix products on row-major `f32` slices, through the `gemm` crate, on the calling
//! thread: the BERT encoder's dense layers and attention, and the exact scan's cosines
//! ([`crate::store::MemoryStore`]).
//!
//! Every product writes its output and never reads it. `gemm` picks its kernels by shape, so a
//! row's result may round differently when the call has fewer rows (one row takes a
//! matrix-vector path): a caller whose answers must not depend on the batch fixes the shape,
//! as the exact scan does.

use gemm::{Parallelism, gemm};

/// `output = input · weight` for row-major `input` `(rows, inputs)`, `weight`
/// `(inputs, outputs)` and `output` `(rows, outputs)`.
pub(crate) fn matmul(output: &mut [f32], input: &[f32], weight: &[f32], outputs: usize) {
    let inputs = weight.len() / outputs;
    let rows = input.len() / inputs;
    assert!(
        input.len() == rows * inputs && output.len() == rows * outputs,
        "matmul: {rows} rows of {inputs} into {outputs} outputs do not fit the slices"
    );
    // SAFETY: the three matrices fill their slices exactly, as just checked, and `output` is
    // borrowed mutably, so nothing else reads or writes it.
    unsafe {
        product(
            (rows, outputs, inputs),
            (output.as_mut_ptr(), outputs),
            Strided::rows(input.as_ptr(), inputs),
            Strided::rows(weight.as_ptr(), outputs),
        );
    }
}

/// `output = left · rightᵀ`: the dot product of every `width`-wide row of `left` with every
/// `width`-wide row of `right`, row-major `(left rows, right rows)`.
pub(crate) fn dot_products(output: &mut [f32], left: &[f32], right: &[f32], width: usize) {
    let (rows, columns) = (left.len() / width, right.len() / width);
    assert!(
        left.len() == rows * width
            && right.len() == columns * width
            && output.len() == rows * columns,
        "dot_products: {rows} x {columns} rows of {width} do not fit the slices"
    );
    // SAFETY: as in `matmul`; `right` is read transposed through its strides, inside its slice.
    unsafe {
        product(
            (rows, columns, width),
            (output.as_mut_ptr(), columns),
            Strided::rows(left.as_ptr(), width),
            Strided::transposed(right.as_ptr(), width),
        );
    }
}

/// A matrix in memory: its first element and the steps, in elements, to the next row and
/// the next column.
#[derive(Clone, Copy)]
pub(crate) struct Strided {
    first: *const f32,
    row: usize,
    column: usize,
}

impl Strided {
    /// Rows `row` elements apart, columns side by side.
    pub(crate) fn rows(first: *const f32, row: usize) -> Self {
        Strided {
            first,
            row,
            column: 1,
        }
    }

    /// The transpose of a matrix whose rows lie `row` elements apart: its columns are those
    /// rows.
    pub(crate) fn transposed(first: *const f32, row: usize) -> Self {
        Strided {
            first,
            row: 1,
            column: row,
        }
    }
}

/// `output = left · right` for `(rows, columns, inner)` shapes `left` `(rows, inner)`, `right`
/// `(inner, columns)` and `output` `(rows, columns)` with rows `output.1` apart, on the calling
/// thread.
///
/// # Safety
/// Every element the shapes and strides reach must lie inside live memory, and the output's
/// must be written by nothing else for the call.
pub(crate) unsafe fn product(
    (rows, columns, inner): (usize, usize, usize),
    output: (*mut f32, usize),
    left: Strided,
    right: Strided,
) {
    // SAFETY: passed on to the caller.
    unsafe {
        gemm(
            rows,
            columns,
            inner,
            output.0,
            1,
            output.1 as isize,
            false,
            left.first,
            left.column as isize,
            left.row as isize,
            right.first,
            right.column as isize,
            right.row as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}
