import logging
logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s: %(message)s")
logging.info("Using attention backend: flashinfer")
import flashinfer  # noqa
