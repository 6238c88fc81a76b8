//! The tagged text format: the tolerant, bounded parser of model replies and the renderer of
//! prompt trees as tags.
