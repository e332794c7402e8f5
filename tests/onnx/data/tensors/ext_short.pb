Bxj
locationweights.binj
offset20p