//! Flag groups that several commands share (`#[command(flatten)]`), so that the commands that must
//! agree cannot drift apart.

pub(crate) mod adopt;
pub(crate) mod namespace;
pub(crate) mod policy;
