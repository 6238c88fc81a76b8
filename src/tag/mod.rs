//! The tagged text format: the tolerant, bounded parser of model replies and the renderer of
//! prompt trees as tags.
//!
//! - [`syntax`]: names, entities, escaping (shared by both directions).
//! - [`tree`]: the parsed tree in a reusable fixed-capacity arena ([`TagTree`], [`Node`]).
//! - [`parse`]: the parser ([`TagTree::parse`]).
//! - [`render`]: trees and key/text pairs written as tags ([`render_tree`], [`render_pairs`]).
//!
//! What the model's reply *means* is not decided here but in [`crate::reply`].

pub mod parse;
pub mod render;
pub mod syntax;
pub mod tree;

pub use render::{render_pairs, render_tree, Shape, Source, Style, TagWriter};
pub use tree::{Limit, Node, ParseOptions, ParseReport, TagTree};
