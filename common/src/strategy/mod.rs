//! Deployment strategies: node groups, selectors, success criteria and the sequencing state machine.
