import sys

from keras_nalu.cli import main

sys.exit(main())
