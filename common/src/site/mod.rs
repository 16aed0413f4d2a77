//! An Airship site as Plinth takes it: the documents rendered as Deckhand renders them, Drydock's
//! nodes compiled from them ([`drydock`]), and the enrollment those nodes make ([`enrollment`]).

pub mod drydock;
pub mod enrollment;

pub use drydock::{compile, DrydockError, Site, SiteNode};
pub use enrollment::{enrollment_document, NotEnrolled};
