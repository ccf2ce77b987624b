//! The value storage a room is prepared for (issue #25, docs/precision.md): the plan's
//! `storage=`, which [`crate::Plan`] sets after rounding the values to it. The device side is
//! `gpu::stored::DeviceValues`.

use crate::error::Result;
use crate::methods::{Params, VALUES_PARAM};
use crate::scalar::ValueStorage;

/// The plan's `storage=` in `params`, `Same` when absent.
pub(crate) fn storage_of(params: &Params) -> Result<ValueStorage> {
    params
        .get(VALUES_PARAM)
        .map_or(Ok(ValueStorage::Same), str::parse)
}
