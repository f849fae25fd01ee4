//! Build-time generator of transport ConfigMaps from a provider's rendered components.

fn main() {}
