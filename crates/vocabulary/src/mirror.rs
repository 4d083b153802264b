//! [`MirrorKind`]: whether an image mirror serves pulls by digest only or by tag too.

use serde::{Deserialize, Serialize};

/// Whether a mirror may be used for pulls by digest only, or also by tag. Serialized as `Digest` / `Tag`; the
/// payload renderer's former spelling `digest` / `tag` is read too.
///
/// ```
/// use wmco_vocabulary::MirrorKind;
///
/// assert_eq!(serde_json::to_string(&MirrorKind::Tag)?, "\"Tag\"");
/// assert!(MirrorKind::Digest < MirrorKind::Tag);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MirrorKind {
    /// From an ImageDigestMirrorSet: capability `pull`.
    #[serde(alias = "digest")]
    Digest,
    /// From an ImageTagMirrorSet: capabilities `pull` and `resolve`.
    #[serde(alias = "tag")]
    Tag,
}
