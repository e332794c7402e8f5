Bxj"
location../tensors/weights.binp