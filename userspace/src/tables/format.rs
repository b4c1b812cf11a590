//! How values enter Arrow builders (addresses print as [`crate::addr`] says).
use std::fmt::{Display, Write as _};

use arrow_array::ArrowPrimitiveType;
use arrow_array::builder::{BooleanBuilder, PrimitiveBuilder, StringBuilder};

/// Appends an optional value (None becomes null) to a builder.
pub trait AppendValue<V> {
    fn append_value_opt(&mut self, value: Option<V>);
}

impl<T: ArrowPrimitiveType> AppendValue<T::Native> for PrimitiveBuilder<T> {
    #[inline]
    fn append_value_opt(&mut self, value: Option<T::Native>) {
        self.append_option(value);
    }
}

impl AppendValue<bool> for BooleanBuilder {
    #[inline]
    fn append_value_opt(&mut self, value: Option<bool>) {
        self.append_option(value);
    }
}

/// A builder with room for `rows` values.
pub trait WithRows {
    fn with_rows(rows: usize) -> Self;
}

impl<T: ArrowPrimitiveType> WithRows for PrimitiveBuilder<T> {
    fn with_rows(rows: usize) -> Self {
        Self::with_capacity(rows)
    }
}

impl WithRows for BooleanBuilder {
    fn with_rows(rows: usize) -> Self {
        Self::with_capacity(rows)
    }
}

impl WithRows for StringBuilder {
    fn with_rows(rows: usize) -> Self {
        // Addresses and names: 16 bytes a row is about right.
        Self::with_capacity(rows, rows * 16)
    }
}

/// Strings are formatted straight into the builder's buffer: no String per row.
impl<D: Display> AppendValue<D> for StringBuilder {
    #[inline]
    fn append_value_opt(&mut self, value: Option<D>) {
        match value {
            Some(v) => {
                // Writing into the builder cannot fail.
                let _ = write!(self, "{v}");
                self.append_value("");
            }
            None => self.append_null(),
        }
    }
}
