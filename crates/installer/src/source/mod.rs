//! Provider sources as the installer reads them: the source kinds ([`configmap`], transport ConfigMaps
//! from a watch cache; [`profile`], image-based profiles on disk; [`images`], the release's image
//! references), and the pure types and selection they feed, from the planning crate
//! ([`capi_bundle::source`]).

pub mod configmap;
pub mod images;
pub mod profile;

pub use capi_bundle::source::*;
