import os
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
import jax, jax.numpy as jnp
print(jax.devices(), flush=True)
x = jnp.ones((200 * 1024**3 // 4,), dtype=jnp.float32)
print(x.sum())
