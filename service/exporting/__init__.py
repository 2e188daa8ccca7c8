"""Writing what qadi stores in formats other tools read (`qadi export`)."""
