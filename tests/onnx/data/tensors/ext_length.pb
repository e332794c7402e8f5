Bxj
locationweights.binj
length12p