//! Revisions: the log of every applied version of each provider source, for rollback. The record, the
//! choice of what to apply and the stored form are pure ([`capi_status::revision`], re-exported
//! here); [`store`] reads and writes the ConfigMaps.

pub use capi_status::revision::*;

pub(crate) mod store;
