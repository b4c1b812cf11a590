//! The Arrow arrays `packets.parquet` is built of, column by column over
//! a batch of records: which rows hold a value, number columns widened one
//! width up, timestamps, and the text columns as dictionary arrays of the
//! batch's distinct strings ([`Texts`]).
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType, UInt32Type,
};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, PrimitiveArray, StringArray, UInt32Array,
    new_null_array,
};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use rocescope_common::wire::TransportId;
use rocescope_common::{Kind, PacketRecord};

use crate::analyze::hash::FastState;
use crate::tables::format::{Widen, micros, timestamp_type};

/// Rows valid in both `a` and `b`.
pub(super) fn and(a: Option<NullBuffer>, b: &Option<NullBuffer>) -> Option<NullBuffer> {
    NullBuffer::union(a.as_ref(), b.as_ref())
}

/// Which rows hold a value. `None` when every row does: the array then
/// carries no bitmap at all.
pub(super) fn validity<R>(rows: &[R], valid: impl Fn(&R) -> bool) -> Option<NullBuffer> {
    let bits = BooleanBuffer::collect_bool(rows.len(), |i| valid(&rows[i]));
    let nulls = NullBuffer::new(bits);
    (nulls.null_count() > 0).then_some(nulls)
}

/// True when `nulls` says that none of `len` rows holds a value.
pub(super) fn all_null(nulls: &Option<NullBuffer>, len: usize) -> bool {
    len > 0 && nulls.as_ref().is_some_and(|n| n.null_count() == len)
}

thread_local! {
    /// [`null_array`]'s arrays: the last one made of each type.
    static NULL_ARRAYS: RefCell<Vec<ArrayRef>> = const { RefCell::new(Vec::new()) };
}

/// An array of `len` nulls of `data_type`. Made once and shared (arrays are
/// immutable): a RoCE batch has ~35 all-null columns (UET's 20, PFC's,
/// the atomics', ...), and making each afresh zeroed a values buffer of
/// the batch's length (32 KB for an `Int64` column of 4,096 rows) that
/// the writer never reads: its levels say there are no values.
pub(super) fn null_array(data_type: &DataType, len: usize) -> ArrayRef {
    NULL_ARRAYS.with_borrow_mut(|made| {
        if let Some(a) = made
            .iter()
            .find(|a| a.len() == len && a.data_type() == data_type)
        {
            return Arc::clone(a);
        }
        let a = new_null_array(data_type, len);
        // One length a type: batches but the last are all of one size.
        made.retain(|m| m.data_type() != data_type);
        made.push(Arc::clone(&a));
        a
    })
}

/// A number column: `value` of every row (computed for null rows too, where
/// it is never written), null where `nulls` says so. Generic over `value` so
/// that each column is a loop of its own, inlined.
pub(super) fn primitive<T: ArrowPrimitiveType, R>(
    rows: &[R],
    nulls: &Option<NullBuffer>,
    value: impl Fn(&R) -> T::Native,
) -> ArrayRef {
    if all_null(nulls, rows.len()) {
        return null_array(&T::DATA_TYPE, rows.len());
    }
    let values = ScalarBuffer::from(rows.iter().map(value).collect::<Vec<_>>());
    Arc::new(PrimitiveArray::<T>::new(values, nulls.clone()))
}

/// A boolean column: `value` of every row, null where `nulls` says so.
pub(super) fn boolean<R>(
    rows: &[R],
    nulls: &Option<NullBuffer>,
    value: impl Fn(&R) -> bool,
) -> ArrayRef {
    let values = BooleanBuffer::collect_bool(rows.len(), |i| value(&rows[i]));
    Arc::new(BooleanArray::new(values, nulls.clone()))
}

/// The `ts` column: `ts_ns` as a UTC microsecond timestamp.
pub(super) fn timestamps(recs: &[PacketRecord]) -> ArrayRef {
    let values = ScalarBuffer::from(recs.iter().map(|r| micros(r.ts_ns)).collect::<Vec<_>>());
    Arc::new(
        PrimitiveArray::<TimestampMicrosecondType>::new(values, None)
            .with_data_type(timestamp_type()),
    )
}

/// Number columns of a batch of records, by the field's width: each goes
/// into the signed type one width up ([`Widen`], docs/tables.md "Numbers").
pub(super) struct Batch<'a>(pub(super) &'a [PacketRecord]);

impl Batch<'_> {
    pub(super) fn u8s(
        &self,
        nulls: &Option<NullBuffer>,
        v: impl Fn(&PacketRecord) -> u8,
    ) -> ArrayRef {
        primitive::<Int16Type, _>(self.0, nulls, |r| v(r).widen())
    }
    pub(super) fn u16s(
        &self,
        nulls: &Option<NullBuffer>,
        v: impl Fn(&PacketRecord) -> u16,
    ) -> ArrayRef {
        primitive::<Int32Type, _>(self.0, nulls, |r| v(r).widen())
    }
    pub(super) fn u32s(
        &self,
        nulls: &Option<NullBuffer>,
        v: impl Fn(&PacketRecord) -> u32,
    ) -> ArrayRef {
        primitive::<Int64Type, _>(self.0, nulls, |r| v(r).widen())
    }
    pub(super) fn u64s(
        &self,
        nulls: &Option<NullBuffer>,
        v: impl Fn(&PacketRecord) -> u64,
    ) -> ArrayRef {
        primitive::<Int64Type, _>(self.0, nulls, |r| v(r).widen())
    }
}

/// A string column of `len` rows holding `text` wherever `nulls` says a
/// row has a value: a dictionary of that one string, every key 0.
pub(super) fn one_text(text: &str, len: usize, nulls: &Option<NullBuffer>) -> ArrayRef {
    if all_null(nulls, len) {
        return null_array(&text_type(), len);
    }
    let keys = UInt32Array::new(ScalarBuffer::from(vec![0u32; len]), nulls.clone());
    let values = StringArray::from(vec![text]);
    match DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)) {
        Ok(d) => Arc::new(d),
        Err(_) => null_array(&text_type(), len),
    }
}

/// `link`: native InfiniBand (an LRH) or not.
pub(super) fn link_texts() -> Texts<Kind> {
    Texts {
        texts: vec!["roce".into(), "ib".into()],
        ..Texts::default()
    }
}

/// `transport`: the registry's names, keyed by [`TransportId::index`].
pub(super) fn transport_texts() -> Texts<Kind> {
    Texts {
        texts: TransportId::ALL
            .iter()
            .map(|t| t.entry().name.into())
            .collect(),
        ..Texts::default()
    }
}

/// The `kind` column's names, keyed by [`Kind`]'s byte.
pub(super) fn kind_texts() -> Texts<Kind> {
    Texts {
        keys: HashMap::default(),
        // Every kind's byte: from 0 up to the last that is one.
        texts: (0..=u8::MAX)
            .take_while(|&v| v == 0 || Kind::from_u8(v) as u8 == v)
            .map(|v| Kind::from_u8(v).as_str().into())
            .collect(),
        ..Texts::default()
    }
}

/// Distinct strings of a column, each formatted once: rows refer to them
/// by key, and a column is a dictionary array of the strings its batch uses.
pub(super) struct Texts<K> {
    pub(super) keys: HashMap<K, u32, FastState>,
    pub(super) texts: Vec<Box<str>>,
    /// [`Texts::column`]'s scratch: the batch's index of each key it uses
    /// (`u32::MAX`: unused), and those keys in order.
    pub(super) local: Vec<u32>,
    pub(super) used: Vec<u32>,
}

impl<K> Default for Texts<K> {
    fn default() -> Self {
        Self {
            keys: HashMap::default(),
            texts: Vec::new(),
            local: Vec::new(),
            used: Vec::new(),
        }
    }
}

/// The Arrow type of the string columns: dictionary keys into the batch's
/// distinct strings (stored as plain UTF8 strings all the same).
pub(super) fn text_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

impl Texts<Box<str>> {
    /// The key of `text`.
    #[inline]
    pub(super) fn key_str(&mut self, text: &str) -> u32 {
        if let Some(&k) = self.keys.get(text) {
            return k;
        }
        let k = self.texts.len() as u32;
        self.keys.insert(text.into(), k);
        self.texts.push(text.into());
        k
    }
}

impl<K: Copy + Eq + Hash + Display> Texts<K> {
    /// The key of `value`, formatting it if it is new.
    #[inline]
    pub(super) fn key(&mut self, value: K) -> u32 {
        let next = self.texts.len() as u32;
        let k = *self.keys.entry(value).or_insert(next);
        if k == next {
            self.texts.push(value.to_string().into_boxed_str());
        }
        k
    }

    /// A string column of `value` of every row, null where `nulls` says so.
    pub(super) fn column_of(
        &mut self,
        recs: &[PacketRecord],
        nulls: &Option<NullBuffer>,
        value: impl Fn(&PacketRecord) -> K,
    ) -> ArrayRef {
        if all_null(nulls, recs.len()) {
            return null_array(&text_type(), recs.len());
        }
        // The row before's value and key: a run of one flow's frames
        // repeats its addresses, and a compare is cheaper than the lookup.
        let mut last: Option<(K, u32)> = None;
        let keys: Vec<Option<u32>> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| match nulls {
                Some(n) if n.is_null(i) => None,
                _ => {
                    let v = value(r);
                    Some(match last {
                        Some((lv, k)) if lv == v => k,
                        _ => {
                            let k = self.key(v);
                            last = Some((v, k));
                            k
                        }
                    })
                }
            })
            .collect();
        self.column(keys.into_iter())
    }

    pub(super) fn forget_if_over(&mut self, max: usize) {
        if self.texts.len() > max {
            self.keys.clear();
            self.texts.clear();
        }
    }
}

impl<K> Texts<K> {
    /// A string column of the texts `keys` name (`None`, or an unknown key:
    /// null): each distinct text once, in the order the rows first use it,
    /// and a key per row.
    pub(super) fn column(&mut self, keys: impl ExactSizeIterator<Item = Option<u32>>) -> ArrayRef {
        let n = keys.len();
        if self.local.len() < self.texts.len() {
            self.local.resize(self.texts.len(), u32::MAX);
        }
        let mut rows = Vec::with_capacity(n);
        // The null rows, if any: most string columns have none in a batch,
        // and then no bitmap is built.
        let mut null_rows = Vec::new();
        for (i, key) in keys.enumerate() {
            let slot = key.and_then(|k| self.local.get_mut(k as usize).map(|l| (k, l)));
            let row = match slot {
                Some((_, l)) if *l != u32::MAX => Some(*l),
                Some((k, l)) => {
                    *l = self.used.len() as u32;
                    self.used.push(k);
                    Some(*l)
                }
                None => None,
            };
            match row {
                Some(l) => rows.push(l),
                None => {
                    rows.push(0);
                    null_rows.push(i);
                }
            }
        }
        let values: StringArray = self
            .used
            .iter()
            .map(|&k| self.texts.get(k as usize).map(|t| &**t))
            .collect();
        for &k in &self.used {
            if let Some(l) = self.local.get_mut(k as usize) {
                *l = u32::MAX;
            }
        }
        self.used.clear();
        let nulls = (!null_rows.is_empty()).then(|| {
            let mut valid = BooleanBufferBuilder::new(n);
            valid.append_n(n, true);
            for &i in &null_rows {
                valid.set_bit(i, false);
            }
            NullBuffer::new(valid.finish())
        });
        let keys = UInt32Array::new(ScalarBuffer::from(rows), nulls);
        // Every key indexes `values` (one entry per key handed out), so
        // this cannot fail; were it to, the column would read as nulls.
        match DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)) {
            Ok(d) => Arc::new(d),
            Err(_) => new_null_array(&text_type(), n),
        }
    }
}
