"""HTTP layer: thin routers over the services, one error contract, typed request/response models."""
