//! How values enter Arrow builders (addresses print as [`crate::addr`] says).
//!
//! Every integer column is signed (docs/tables.md, "Numbers"): Spark, Delta
//! and Iceberg have no unsigned types, and engines that do (DuckDB, polars)
//! overflow or wrap on `a - b` of two unsigned columns. An unsigned value
//! goes into the next wider signed builder, and only those pairs exist here
//! (`u8` → `Int16`, `u16` → `Int32`, `u32` → `Int64`, `u64` → `Int64`), so a
//! table cannot declare a column that does not fit its values. `u64` keeps
//! its 64 bits: counters never reach 2^63; addresses and atomic operands
//! above it read as negative numbers with the same bits.
use std::fmt::{Display, Write as _};

use arrow_array::ArrowPrimitiveType;
use arrow_array::builder::{BooleanBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{Float64Type, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_schema::DataType;

/// Appends an optional value (None becomes null) to a builder.
pub trait AppendValue<V> {
    fn append_value_opt(&mut self, value: Option<V>);
}

/// A value of the builder's own type. Listed per type rather than for every
/// primitive builder, so that the unsigned impls below do not overlap.
macro_rules! native {
    ($($ty:ty => $native:ty),*) => {$(
        impl AppendValue<$native> for PrimitiveBuilder<$ty> {
            #[inline]
            fn append_value_opt(&mut self, value: Option<$native>) {
                self.append_option(value);
            }
        }
    )*};
}
native!(Int16Type => i16, Int32Type => i32, Int64Type => i64, Float64Type => f64,
    TimestampMicrosecondType => i64);

/// The signed type an unsigned field is stored as (docs/tables.md, "Numbers").
pub trait Widen: Copy {
    type Signed;
    fn widen(self) -> Self::Signed;
}

/// Each unsigned type: its signed type one width up (`as` zero-extends;
/// `u64` keeps its 64 bits, see the module's doc) and its builder.
macro_rules! widen {
    ($($from:ty => $signed:ty, $builder:ty);*) => {$(
        impl Widen for $from {
            type Signed = $signed;
            #[inline]
            fn widen(self) -> $signed {
                self as $signed
            }
        }

        impl AppendValue<$from> for PrimitiveBuilder<$builder> {
            #[inline]
            fn append_value_opt(&mut self, value: Option<$from>) {
                self.append_option(value.map(Widen::widen));
            }
        }
    )*};
}
widen!(u8 => i16, Int16Type; u16 => i32, Int32Type; u32 => i64, Int64Type; u64 => i64, Int64Type);

/// A `*_ns` time as its `TIMESTAMP(MICROS, UTC)` companion: microseconds
/// since the epoch, rounded down (the exact time stays in the `*_ns` column).
#[inline]
pub fn micros(ns: u64) -> i64 {
    (ns / 1000) as i64
}

/// The type of every timestamp column: UTC microseconds. Spark rejects
/// nanosecond timestamps unless told otherwise and Delta has only
/// microseconds; UTC (`isAdjustedToUTC`) makes engines read an instant,
/// not a local wall-clock time.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into()))
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
        let builder = Self::with_capacity(rows);
        // Every timestamp column of the tables is UTC.
        match T::DATA_TYPE {
            DataType::Timestamp(unit, None) => {
                builder.with_data_type(DataType::Timestamp(unit, Some("UTC".into())))
            }
            _ => builder,
        }
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

/// A row and the names of the run's interfaces.
pub struct Named<'a, R> {
    pub row: &'a R,
    pub ifaces: &'a [String],
}

impl<R> Named<'_, R> {
    /// Interface `index`'s name (`?` when unnamed).
    pub fn iface(&self, index: u16) -> &str {
        self.ifaces
            .get(usize::from(index))
            .map(String::as_str)
            .unwrap_or("?")
    }
}
