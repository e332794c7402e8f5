Bxj
locationweights.binj
offset8j
length16p